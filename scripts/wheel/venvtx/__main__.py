"""`python -m venvtx ARGS`: runs the venvtx binary this wheel installed, with ARGS."""
import os
import sys
import sysconfig


def binary():
    """The venvtx executable of this installation: in the scripts directory of the environment
    (pip, pipx, uv tool), of the user scheme (pip --user), or beside the package (pip --target)."""
    places = [sysconfig.get_path("scripts"), sysconfig.get_path("scripts", os.name + "_user"),
              os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bin")]
    for place in places:
        candidate = os.path.join(place, "venvtx")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("venvtx: its binary is not in %s" % " or ".join(places))


if __name__ == "__main__":
    path = binary()
    os.execv(path, [path] + sys.argv[1:])
