"""density_metric.io.outputs.replacing: the package's one writer of whole files (tables, compare --json)."""

import json
import tarfile

import pytest

from density_metric.io.outputs import replacing, write_json, write_text


def test_a_finished_block_replaces_the_earlier_file_and_leaves_no_hidden_file(tmp_path):
    path = tmp_path / "report.json"
    path.write_text("earlier\n", encoding="utf-8")
    with replacing(path, encoding="utf-8") as handle:
        handle.write("new\n")
        assert path.read_text(encoding="utf-8") == "earlier\n"  # nothing shows before the block ends
    assert path.read_text(encoding="utf-8") == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_an_exception_in_the_block_keeps_the_earlier_file_and_removes_the_hidden_one(tmp_path, error):
    path = tmp_path / "report.json"
    path.write_text("earlier\n", encoding="utf-8")
    with pytest.raises(error), replacing(path, encoding="utf-8") as handle:
        handle.write("half")
        raise error
    assert path.read_text(encoding="utf-8") == "earlier\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_write_text_makes_the_folder_and_writes_through_a_symlink(tmp_path):
    write_text(tmp_path / "new" / "deeper" / "a.json", json.dumps({"a": 1}))
    assert json.loads((tmp_path / "new" / "deeper" / "a.json").read_text()) == {"a": 1}
    (tmp_path / "target.json").write_text("earlier")
    (tmp_path / "link.json").symlink_to(tmp_path / "target.json")
    write_text(tmp_path / "link.json", "through")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "target.json").read_text() == "through"


def test_write_json_writes_what_json_dumps_gives_and_a_newline(tmp_path):
    value = {"b": [1, 2.5], "when": tmp_path}
    write_json(tmp_path / "r.json", value, indent=1, default=str)
    assert (tmp_path / "r.json").read_text(encoding="utf-8") == json.dumps(value, indent=1, default=str) + "\n"
    write_json(tmp_path / "r.json", {"a": "é"})
    assert (tmp_path / "r.json").read_text(encoding="utf-8") == '{\n  "a": "\\u00e9"\n}\n'
    with pytest.raises(TypeError):  # not serialisable without default: the earlier file stays
        write_json(tmp_path / "r.json", {"when": tmp_path})
    assert json.loads((tmp_path / "r.json").read_text()) == {"a": "é"}


def test_a_binary_handle_takes_a_tar_stream(tmp_path):
    (tmp_path / "log.txt").write_text("a line\n")
    with replacing(tmp_path / "out.tar.gz", "xb") as handle, tarfile.open(fileobj=handle, mode="w:gz") as tar:
        tar.add(tmp_path / "log.txt", arcname="log.txt")
    with tarfile.open(tmp_path / "out.tar.gz") as tar:
        assert tar.getnames() == ["log.txt"] and tar.extractfile("log.txt").read() == b"a line\n"


@pytest.mark.parametrize("mode", ["w", "a", "wb", "r"])
def test_a_mode_that_would_not_make_a_new_file_is_refused(tmp_path, mode):
    with pytest.raises(ValueError, match="mode must be 'x' or 'xb'"), replacing(tmp_path / "a", mode):
        pass
