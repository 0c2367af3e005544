"""Optional wrappers of CANN tools (msaccucmp.py, atc) when CMD_ROOT_PATH has them. Import analysis/ and
formats/; imported by the shell (vc --backend cann).
"""
