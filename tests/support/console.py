"""What a person must not see on adrank's console."""

import re

# A line of TensorFlow's C++ logging (absl/glog: `I0000 00:00:…`, `E0000 … failed call to cuInit`) or absl's notice
# before it starts (`WARNING: All log messages before absl::InitializeLog() …`).
NATIVE_LINE = re.compile(r"^(?:[IWEF]\d{4} \d\d:\d\d:|WARNING: All log messages before absl::InitializeLog)", re.M)
