"""What the capture side records about a run besides its tensors (run_config_record: the settings that
decide its numbers). Training-side code: no shell, no terminal libraries."""
