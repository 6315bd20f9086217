import sys

from dptext.cli import main

sys.exit(main())
