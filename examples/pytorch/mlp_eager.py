"""A small transformer-style MLP block in eager PyTorch, for recording with kfuse on a GPU machine.

    kfuse record -o mlp.sqlite -- python3 examples/pytorch/mlp_eager.py
    python3 examples/pytorch/mlp_eager.py --profile mlp_kineto.json   # a PyTorch profiler (Kineto) trace instead

Eager mode launches one kernel per operator: GEMM, bias, GELU, dropout-free residual add and layer norm, the
chains kfuse's PyTorch advice is about. Prints a checksum so that runs can be compared.
"""
import argparse

import torch


class Mlp(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, h)
        self.down = torch.nn.Linear(h, d)

    def forward(self, x):
        y = self.up(self.norm(x))
        y = torch.nn.functional.gelu(y)
        y = y * 1.5 + 0.25
        return x + self.down(y)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", help="write a PyTorch profiler trace (Chrome JSON) here")
    p.add_argument("--steps", type=int, default=4)
    a = p.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    model = torch.nn.Sequential(*[Mlp(512, 2048) for _ in range(2)]).to(dev)
    x = torch.randn(64, 128, 512, device=dev)
    with torch.no_grad():
        model(x)  # warm-up
        torch.cuda.synchronize()
        if a.profile:
            acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            with torch.profiler.profile(activities=acts, record_shapes=True, with_modules=True) as prof:
                for _ in range(a.steps):
                    y = model(x)
                torch.cuda.synchronize()
            prof.export_chrome_trace(a.profile)
        else:
            for _ in range(a.steps):
                y = model(x)
            torch.cuda.synchronize()
    print(f"mlp_eager: device {torch.cuda.get_device_name()}")
    print(f"mlp_eager: checksum {y.double().sum().item():.6f}")


if __name__ == "__main__":
    main()
