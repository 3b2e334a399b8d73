"""Per-study helpers the study tests import (`from support.studies.<module> import ...`): synthetic inputs
with known answers, the analysis' inputs built as its stage builds them, independent reference
computations of the paper's numbers, and the fixtures several test files of one study share."""
