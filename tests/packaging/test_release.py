"""One version, written in pyproject.toml: the package, the command, the citation and the
changelog all name it."""

import re
import tomllib
from importlib import metadata

import pytest

import purerl
from tests.helpers import ROOT, run_cli

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_command_and_the_package_report_the_installed_version():
    installed = metadata.version("purerl")
    assert purerl.__version__ == installed
    result = run_cli("--version")
    assert result.code == 0 and result.stdout == f"purerl {installed}\n"


def test_the_citation_names_the_version_and_the_license():
    yaml = pytest.importorskip("yaml")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    for field in ["cff-version", "message", "title", "authors"]:  # required by CFF 1.2.0
        assert citation.get(field), field
    assert citation["cff-version"] == "1.2.0"
    assert citation["version"] == VERSION
    license_ = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert citation["license"] == license_ == "Apache-2.0"


def test_the_changelog_has_an_unreleased_section_and_the_version():
    headings = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[0] == "Unreleased", headings
    assert VERSION in headings, (VERSION, headings)
