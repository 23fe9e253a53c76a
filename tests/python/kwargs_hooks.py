"""Forward hooks with keyword arguments on torch 1.x, for running the reference module there.

The reference registers `register_forward_pre_hook(hook, with_kwargs=True)` and
`register_forward_hook(hook, with_kwargs=True)`, which exist from torch 2.0. emulate() patches
torch.nn.Module so that such a registration wraps the instance's forward instead: the pre-hook sees
(module, args, kwargs), the post-hook (module, args, kwargs, output). Used for the reference only
(the side-by-side tests and the hook-overhead benchmark); a no-op on torch 2.x.
"""


def emulate():
    """Lets `register_forward_pre_hook(hook, with_kwargs=True)` (torch 2.x) work on torch 1.x by
    wrapping the instance's forward. Only the reference runs with this."""
    import torch

    if int(torch.__version__.split(".")[0]) >= 2:
        return
    module_cls = torch.nn.Module
    plain_pre = module_cls.register_forward_pre_hook
    plain_post = module_cls.register_forward_hook

    def hooks_of(module):
        hooks = module.__dict__.get("_emulated_kwargs_hooks")
        if hooks is None:
            hooks = {"pre": [], "post": []}
            module.__dict__["_emulated_kwargs_hooks"] = hooks
            inner = module.forward

            def forward(*args, **kwargs):
                for hook in hooks["pre"]:
                    changed = hook(module, args, kwargs)
                    if changed is not None:
                        args, kwargs = changed
                output = inner(*args, **kwargs)
                for hook in hooks["post"]:
                    changed = hook(module, args, kwargs, output)
                    if changed is not None:
                        output = changed
                return output

            module.forward = forward
        return hooks

    def register_pre(self, hook, *, prepend=False, with_kwargs=False):
        if not with_kwargs:
            return plain_pre(self, hook)
        hooks_of(self)["pre"].append(hook)

    def register_post(self, hook, *, prepend=False, with_kwargs=False):
        if not with_kwargs:
            return plain_post(self, hook)
        hooks_of(self)["post"].append(hook)

    module_cls.register_forward_pre_hook = register_pre
    module_cls.register_forward_hook = register_post
