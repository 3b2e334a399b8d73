"""`python -m socsim.serving supervise <folder>`: the supervisor of one server."""

import sys

from socsim.serving.supervisor import main

sys.exit(main())
