"""Paper 000's revised study (arXiv 2503.16505v4): its authors' six-model release re-analysed model by model.

- `data`: the import (`socsim facilitation import_revision`): discussions, ablations and the released
  Perspective API scores joined on the authors' message ids;
- `measures`: user comments, per-discussion measures, interventions, participation, the authors' rows;
- `claims`: the revision's claims, each judged per model and on all models (`CLAIMS`);
- `report`: `analyse(inputs) -> Report`: the authors' table refit beside the printed one, socsim's fit,
  the claims and the per-model grid;
- `plots` / `figures`: what the figures draw, and the drawing.
"""
