#!/usr/bin/env python3
"""Export torchvision's ResNet-50 to ONNX with a dynamic batch dimension.

Usage: export_resnet50.py OUT.onnx

The GPU machine has no network, so torchvision cannot fetch the trained weights:
the architecture is torchvision's, the weights are its default initialisation with
torch.manual_seed(0) (BatchNorm statistics set to non-trivial seeded values so that
every layer does real arithmetic). Speed does not depend on the weights' values;
the CPU-vs-GPU output comparison does not either. Input "input" [N,3,224,224]
float32, output "logits" [N,1000]. Opset 17.
"""
import sys

import torch
import torchvision


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    model.eval()
    x = torch.rand(1, 3, 224, 224)
    kwargs = dict(input_names=["input"], output_names=["logits"], opset_version=17,
                  dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    try:
        torch.onnx.export(model, (x,), sys.argv[1], dynamo=False, **kwargs)
    except TypeError:  # a torch without the dynamo switch
        torch.onnx.export(model, (x,), sys.argv[1], **kwargs)
    print(f"wrote {sys.argv[1]} (torch {torch.__version__}, torchvision {torchvision.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
