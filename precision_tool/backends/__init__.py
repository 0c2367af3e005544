"""Optional wrappers of CANN tools (msaccucmp.py, atc) when CMD_ROOT_PATH has them."""
