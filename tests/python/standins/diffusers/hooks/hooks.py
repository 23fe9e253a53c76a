"""Stand-in for diffusers.hooks.hooks: ModelHook and HookRegistry with diffusers' documented
behaviour. A registry replaces its module's `forward`; each registered hook wraps what was there
(so the last one registered is outermost); a hook with `new_forward` replaces the call and reaches
the inner forward through `self.fn_ref.original_forward`."""
import functools


class ModelHook:
    _is_stateful = False

    def __init__(self):
        self.fn_ref = None

    def initialize_hook(self, module):
        return module

    def deinitalize_hook(self, module):  # diffusers' spelling
        return module

    def pre_forward(self, module, *args, **kwargs):
        return args, kwargs

    def post_forward(self, module, output):
        return output

    def reset_state(self, module):
        return module


class HookFunctionReference:
    def __init__(self):
        self.pre_forward = None
        self.post_forward = None
        self.forward = None
        self.original_forward = None


class HookRegistry:
    def __init__(self, module_ref):
        self.hooks = {}
        self._module_ref = module_ref
        self._hook_order = []
        self._fn_refs = []

    def register_hook(self, hook, name):
        if name in self.hooks:
            raise ValueError(f"Hook with name {name} already exists in the registry.")
        self._module_ref = hook.initialize_hook(self._module_ref)

        def create_new_forward(ref):
            def new_forward(module, *args, **kwargs):
                args, kwargs = ref.pre_forward(module, *args, **kwargs)
                output = ref.forward(*args, **kwargs)
                return ref.post_forward(module, output)

            return new_forward

        forward = self._module_ref.forward
        ref = HookFunctionReference()
        ref.pre_forward = hook.pre_forward
        ref.post_forward = hook.post_forward
        ref.forward = forward
        if hasattr(hook, "new_forward"):
            ref.original_forward = forward
            ref.forward = functools.partial(hook.new_forward, self._module_ref)
        self._module_ref.forward = functools.partial(create_new_forward(ref), self._module_ref)
        hook.fn_ref = ref
        self.hooks[name] = hook
        self._hook_order.append(name)
        self._fn_refs.append(ref)

    def get_hook(self, name):
        return self.hooks.get(name, None)

    def remove_hook(self, name, recurse=True):
        if name in self.hooks:
            count = len(self._hook_order)
            hook = self.hooks[name]
            index = self._hook_order.index(name)
            ref = self._fn_refs[index]
            old_forward = ref.original_forward if ref.original_forward is not None else ref.forward
            if index == count - 1:
                self._module_ref.forward = old_forward
            else:
                self._fn_refs[index + 1].forward = old_forward
            self._module_ref = hook.deinitalize_hook(self._module_ref)
            del self.hooks[name]
            self._hook_order.pop(index)
            self._fn_refs.pop(index)
        if recurse:
            for module_name, module in self._module_ref.named_modules():
                if module_name and hasattr(module, "_diffusers_hook"):
                    module._diffusers_hook.remove_hook(name, recurse=False)

    @classmethod
    def check_if_exists_or_initialize(cls, module):
        if not hasattr(module, "_diffusers_hook"):
            module._diffusers_hook = cls(module)
        return module._diffusers_hook
