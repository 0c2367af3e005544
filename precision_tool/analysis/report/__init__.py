"""What ac's answer, ni's results and the HTML report say: the answer (answer.py), one op's newest rows and
replay verdict (op_results.py), and the report's data (report_data.py, report_runs.py,
report_tensors.py). May read every other folder of analysis/; imported only by render/ and shell/.
"""
