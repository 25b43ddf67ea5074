"""Print the dependencies declared in pyproject.toml, one per line, for pip.

`python scripts/requirements.py test` adds the `test` extra. Reading pyproject directly keeps
one list of dependencies without building the project as a package.
"""

import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]
requirements = list(project["dependencies"])
for extra in sys.argv[1:]:
    requirements += project["optional-dependencies"][extra]
print("\n".join(requirements))
