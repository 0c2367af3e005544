"""TensorFlow's files: tfdbg v1 and v2 dumps (tfdbg_v1.py, tfdbg_v2.py, with tf_protos.py) and the golden
tensors' names and .npy headers (golden.py). Imports only errors.
"""
