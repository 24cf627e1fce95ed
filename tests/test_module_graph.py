"""The simulator crate's modules form no import cycle (issue 36): a module reads another
through `crate::<module>` paths, test-only code aside, and the graph of those reads must be
a DAG. A cycle is reported with its modules in order."""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "crates" / "sim" / "src"


def _without_test_items(text: str) -> str:
    """``text`` less every item under ``#[cfg(test)]`` (a ``mod tests { … }`` or one line)."""
    kept: list[str] = []
    depth, skip_until, pending = 0, None, False
    for line in text.split("\n"):
        code = re.sub(r"//.*", "", line)
        if skip_until is None and code.strip() == "#[cfg(test)]":
            pending = True
            continue
        opens, closes = code.count("{"), code.count("}")
        if pending:
            pending = False
            if opens > closes:
                skip_until = depth
                depth += opens - closes
            continue
        depth += opens - closes
        if skip_until is not None:
            if depth <= skip_until:
                skip_until = None
            continue
        kept.append(code)
    return "\n".join(kept)


def module_graph() -> dict[str, set[str]]:
    """Top-level module -> the top-level modules its non-test code names."""
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.rs"):
        module = path.relative_to(SRC).with_suffix("").parts[0]
        if module == "lib" or path.name == "tests.rs":
            continue
        text = _without_test_items(path.read_text())
        graph.setdefault(module, set()).update(m for m in re.findall(r"crate::(\w+)", text) if m != module)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_find_cycle_finds_one_and_only_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    text = "use crate::a::X;\n#[cfg(test)]\nmod tests {\n    use crate::b::Y;\n}\nfn f() { crate::c::g() }\n"
    assert re.findall(r"crate::(\w+)", _without_test_items(text)) == ["a", "c"]


def test_the_simulator_crate_has_no_import_cycle():
    graph = module_graph()
    assert {"config", "tcp", "trace", "sim"} <= set(graph), sorted(graph)
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph) or [])}"
    # The two edges that made the cycle (issue 36) stay gone.
    assert "trace" not in graph["config"] and "config" not in graph["tcp"]
