import settings
import torchvision

def loadmodel(hook_fn):
    model = torchvision.models.__dict__[settings.MODEL](pretrained=True)
    for name in settings.FEATURE_NAMES:
        model._modules.get(name).register_forward_hook(hook_fn)
    if settings.GPU:
        model.cuda()
    model.eval()
    return model
