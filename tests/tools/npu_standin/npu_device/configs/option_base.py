"""Stand-in of npu_device.configs.option_base: an option checks the values it is given; a config refuses
attributes it does not define; as_dict() flattens nested configs and spells bools "1"/"0"."""


class OptionValue:
    def __init__(self, default, optional):
        self.__default = default
        self.__optional = optional
        self.__value = default

    @property
    def default(self):
        return self.__default

    @property
    def optional(self):
        return self.__optional

    @property
    def value(self):
        if self.__value is None:
            return None
        text = str(self.__value)
        return {"True": "1", "False": "0"}.get(text, text)

    @value.setter
    def value(self, v):
        # As the adapter: outside an allowed list is a TypeError when the type differs from the default's,
        # else a ValueError; `in` compares with ==, so 1 passes for True (as there).
        if isinstance(self.__optional, (tuple, list)) and v not in self.__optional:
            if self.__default is not None and not isinstance(v, type(self.__default)):
                raise TypeError(f"Expected {type(self.__default).__name__}, got {type(v).__name__}")
            raise ValueError(f"'{v}' not in optional list {self.__optional}")
        self.__value = v


class DeprecatedValue(OptionValue):
    def __init__(self, optional, *, replacement):
        super().__init__(None, optional)
        self.replacement = replacement


class NpuBaseConfig:
    def __init__(self):
        self._fixed_attrs = [k for k, v in self.__dict__.items() if isinstance(v, (OptionValue, NpuBaseConfig))]

    def __setattr__(self, key, value):
        if hasattr(self, "_fixed_attrs"):
            if key not in self._fixed_attrs:
                raise ValueError(f"{type(self).__name__} has no option {key}, all options {self._fixed_attrs}")
            current = getattr(self, key)
            if isinstance(current, OptionValue):
                current.value = value
                return
        super().__setattr__(key, value)

    def as_dict(self):
        options = {}
        for key, item in self.__dict__.items():
            if key not in self._fixed_attrs:
                continue
            if isinstance(item, DeprecatedValue) and item.value is not None:
                hint = "" if item.replacement is None else f" Please use '{item.replacement}' instead."
                print(f"[warning][tf_adapter] Option '{key}' is deprecated and will be removed in future version.{hint}")
                options[key] = item.value
            elif isinstance(item, OptionValue) and item.value is not None:
                options[key] = item.value
            elif isinstance(item, NpuBaseConfig):
                options.update(item.as_dict())
        return options
