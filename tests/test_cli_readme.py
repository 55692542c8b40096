"""The README's quickstart runs, and the ``kbnf-gpu`` command line answers correctly."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kbnf_gpu.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_readme_quickstart_runs(tmp_path, monkeypatch):
    text = (REPO / "README.md").read_text()
    code = re.search(r"## Quickstart\n\n```python\n(.*?)```", text, re.S).group(1)
    assert len(code.splitlines()) <= 20
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README quickstart", "exec"), {})
    assert (tmp_path / "name.kbnfgpu").exists()


def test_readme_has_exactly_the_two_setup_commands_ci_runs():
    text = (REPO / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", text, re.S)
    assert len(commands) == 2 and "kbnf-gpu demo" in commands[0] and "pytest" in commands[1]
    assert commands[1] in (REPO / ".ci" / "run").read_text()


@pytest.fixture
def grammar_file(tmp_path):
    path = tmp_path / "g.kbnf"
    path.write_text('start ::= "ab" #"[0-9]+" ";";\n')
    return path


@pytest.mark.parametrize("text,code,word", [("ab12;", 0, "complete"), ("ab1", 1, "prefix"),
                                            ("abx", 2, "rejected at byte 2")])
def test_check_command(grammar_file, capsys, text, code, word):
    assert main(["check", str(grammar_file), "--text", text]) == code
    assert word in capsys.readouterr().out


def test_check_command_reports_grammar_errors_with_position(tmp_path, capsys):
    bad = tmp_path / "bad.kbnf"
    bad.write_text('start ::= "ab" | undefined_rule;\n')
    assert main(["check", str(bad), "--text", "ab"]) == 3
    err = capsys.readouterr().err
    assert "undefined" in err and "line 1" in err


def test_compile_command_writes_an_artifact(tmp_path, grammar_file):
    out = tmp_path / "g.kbnfgpu"
    result = subprocess.run([sys.executable, "-m", "kbnf_gpu.cli", "compile", str(grammar_file), "--tokenizer",
                             "gpt2", "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 0
    assert "token tables" in result.stderr  # the progress bar
    assert "artifact_bytes" in result.stdout and "terminals" in result.stdout


def test_compile_command_has_no_time_limit_unless_asked(tmp_path, grammar_file, monkeypatch):
    """An offline compile may take as long as its tables do (the library's default budget is for a request's
    compile); ``--time-budget`` sets one."""
    import kbnf_gpu.compile.compiled as compiled_module
    from kbnf_gpu.errors import CompileBudgetExceeded

    budgets = []
    real = compiled_module.compile_grammar

    def spy(*args, **kwargs):
        budgets.append(kwargs["config"].time_budget_s)
        if budgets[-1] is not None:
            raise CompileBudgetExceeded("compiling took longer than time_budget_s", limit="time_budget_s")
        return real(*args, **kwargs)

    monkeypatch.setattr(compiled_module, "compile_grammar", spy)
    assert main(["compile", str(grammar_file), "--tokenizer", "gpt2", "-q", "-o", str(tmp_path / "a.kbnfgpu")]) == 0
    assert main(["compile", str(grammar_file), "--tokenizer", "gpt2", "-q", "-o", str(tmp_path / "b.kbnfgpu"),
                 "--time-budget", "2.5"]) == 3
    assert budgets == [None, 2.5]
