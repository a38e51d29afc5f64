"""`python -m kgtrain ARGS...`: the same as the `kgtrain` command."""
from ._launcher import main

if __name__ == "__main__":
    main()
