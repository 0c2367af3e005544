"""What `explore` shows in Model Explorer: the NPU Build graph and the golden TF graph as Model Explorer
graph JSON (layers from the TF name scopes), the comparison as node data, and the NPU ↔ TF op mapping.
May import formats, graphs, results, compare, replay and report (the report's run points); imported by the
shell only. No printing, no server: shell/commands/explore/ serves what this writes."""
