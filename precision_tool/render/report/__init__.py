"""The HTML report: report_page.py turns analysis/report/'s data into the page's JSON and table rows,
report_html.py fills report_assets/report.html.j2 with them (jinja2, atomic write). Reads analysis/ and
render/answer.py, render/ops/op_graph.py; imported by shell/commands/compare/report.py.
"""
