"""What the capture side records about a run besides its tensors (run_config_record: the settings that
decide its numbers; loss_recorder: the loss of every step). Training-side code: no shell, no terminal libraries."""
