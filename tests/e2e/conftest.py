import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the e2e tests share the CLI runner in e2e_cli.py
