import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the compiled-spec tests share compiled_spec.py
