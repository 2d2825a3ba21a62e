"""The README's API reference is what python/tools/gen_api_md.py generates
from the typed sources (madstack/__init__.py and madstack/_native.pyi)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "tools" / "gen_api_md.py"


def load_tool():
    spec = importlib.util.spec_from_file_location("gen_api_md", TOOL)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["gen_api_md"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_readme_api_reference_is_generated_from_the_current_stubs():
    diff = load_tool().check()
    assert diff is None, "python/README.md is out of date; run python3 python/tools/gen_api_md.py\n" + diff


def test_readme_check_notices_a_changed_signature_in_the_stubs(tmp_path, monkeypatch):
    tool = load_tool()
    stub = tmp_path / "_native.pyi"
    stub.write_text(tool.STUB.read_text().replace('''    def to_dict(self) -> Dict[str, Any]:''', '''    def to_dict(self, compact: bool = False) -> Dict[str, Any]:'''))
    monkeypatch.setattr(tool, "STUB", stub)
    diff = tool.check()
    assert diff is not None and "+- `attr.to_dict(compact: bool = False) -> Dict[str, Any]`" in diff


def test_readme_check_notices_a_hand_edit_inside_the_markers(tmp_path, monkeypatch):
    tool = load_tool()
    readme = tmp_path / "README.md"
    readme.write_text(tool.README.read_text().replace("Any failure of madstack.", "Any failure."))
    monkeypatch.setattr(tool, "README", readme)
    diff = tool.check()
    assert diff is not None and "-  Any failure." in diff
