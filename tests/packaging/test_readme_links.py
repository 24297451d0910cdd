"""The README renders on a package index: its links are absolute, under the repository URL that
pyproject.toml declares once, and each names a file of this repository."""

import re
import tomllib

from tests.helpers import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_readme_links_are_absolute_and_name_files_of_the_repository():
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    repository = urls["Repository"]
    owner_name = repository.removeprefix("https://github.com/")
    prefixes = (f"{repository}/blob/main/", f"https://raw.githubusercontent.com/{owner_name}/main/")
    links = LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert links, "the README links its picture and docs"
    for link in links:
        prefix = next((p for p in prefixes if link.startswith(p)), None)
        assert prefix, f"{link}: not under {repository} (a relative link breaks on PyPI)"
        assert (ROOT / link.removeprefix(prefix).split("#")[0]).is_file(), link
    assert urls["Documentation"].startswith(prefixes[0])
    assert (ROOT / urls["Documentation"].removeprefix(prefixes[0])).is_file()
