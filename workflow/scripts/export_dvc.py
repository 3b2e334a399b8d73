"""Write (or with --check, verify) dvc.yaml from the study registry: `python workflow/scripts/export_dvc.py`.

The same as `socsim dvc export` / `socsim dvc check`; workflow tooling only, no study logic.
"""

import argparse
import sys
from pathlib import Path

from socsim import dvc

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--check", action="store_true", help="fail if dvc.yaml is out of date")
args = parser.parse_args()
target = Path(__file__).resolve().parents[2] / "dvc.yaml"
try:
    dvc.check(target) if args.check else dvc.write(target)
except ValueError as exc:
    sys.exit(str(exc))
