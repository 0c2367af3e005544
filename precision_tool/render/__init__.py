"""Everything that draws: rich renderables, graphviz pictures. Only the shell and render print."""
