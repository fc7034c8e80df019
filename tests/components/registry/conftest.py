import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the registry tests share fixture_models.py
