"""Real-architecture TF1 training steps for `demo --model`: ResNet-50 v1.5, BERT-base (12 layers) and
Wide&Deep, each built by `<name>.build(size)` into its own tf.Graph (`model_graph.ModelGraph`). Imports
TensorFlow and numpy only (and model_graph); imported by the demo's network child.
"""
