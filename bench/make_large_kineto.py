#!/usr/bin/env python3
"""Writes a SYNTHETIC PyTorch-profiler (Kineto) Chrome trace with N kernel launches (default 200,000), for the GUI
benchmark (bench/gui_bench.cpp): nobody recorded it. The document says so in `traceName` and `kfuse_synthetic`.

The shape follows what real Kineto traces hold (the events and argument names of
../shared/data/kineto/hta_alexnet_a100.json.gz): training-step-like iterations of a fixed sequence of 20 kernels with
repeating names on two streams, a cudaLaunchKernel runtime event per kernel with the same correlation id, a copy and
a memset per step, and a user_annotation range per step. Durations are deterministic (seeded).

usage: make_large_kineto.py OUT.json [--launches N] [--seed S]
"""
import argparse
import json
import random

KERNELS = [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, at::native::AddFunctor<float>)", 4),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>(int, at::native::MulFunctor<float>)", 4),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl<float>>(int, float)", 6),
    ("ampere_sgemm_128x64_nn", 40),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float>>>(float)", 12),
    ("void at::native::(anonymous namespace)::layer_norm_kernel<float>(long, float, float const*, float*)", 10),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, at::native::FillFunctor<float>)", 2),
    ("void cunn_SoftMaxForward<4, float, float, float, cunn::SoftMaxForwardEpilogue>(float*, float const*, int)", 9),
    ("ampere_sgemm_64x32_sliced1x4_tn", 25),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::BUnaryFunctor<float, float, float, at::native::MulFunctor<float>>>(int, float)", 4),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--launches", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    per_step = 20
    steps = (a.launches + per_step - 1) // per_step
    pid, tid = 4242, 4242
    t = 1_700_000_000_000_000  # µs
    corr = 1
    launched = 0
    with open(a.out, "w") as f:
        f.write('{"schemaVersion": 1, "traceName": "SYNTHETIC trace for kfuse GUI benchmarks (bench/make_large_kineto.py)",\n')
        f.write(' "kfuse_synthetic": "generated, not recorded: %d kernel launches, seed %d",\n' % (a.launches, a.seed))
        f.write(' "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920, '
                '"computeMajor": 8, "computeMinor": 0, "numSms": 108}],\n')
        f.write(' "traceEvents": [\n')
        first = True

        def emit(ev):
            nonlocal first
            if not first:
                f.write(",\n")
            first = False
            f.write(json.dumps(ev, separators=(",", ":")))

        for step in range(steps):
            step_start = t
            emit({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
                  "ts": t, "dur": 3, "args": {"device": 0, "stream": 7, "correlation": corr, "bytes": 65536}})
            emit({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": pid, "tid": tid, "ts": t - 2,
                  "dur": 4, "args": {"correlation": corr}})
            corr += 1
            t += 4
            for k in range(per_step):
                if launched >= a.launches:
                    break
                name, base = KERNELS[k % len(KERNELS)]
                stream = 7 if k % 5 != 4 else 20
                dur = max(1, int(base * (0.8 + 0.4 * rng.random())))
                emit({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                      "ts": t - 3, "dur": 3, "args": {"correlation": corr, "External id": corr}})
                emit({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": t, "dur": dur,
                      "args": {"device": 0, "context": 1, "stream": stream, "correlation": corr, "External id": corr,
                               "registers per thread": 32, "shared memory": 0, "grid": [432, 1, 1],
                               "block": [256, 1, 1]}})
                corr += 1
                launched += 1
                t += dur + 1
            emit({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": t, "dur": 1,
                  "args": {"device": 0, "stream": 7, "correlation": corr}})
            emit({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": pid, "tid": tid, "ts": t - 2,
                  "dur": 2, "args": {"correlation": corr}})
            corr += 1
            t += 3
            emit({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step, "pid": pid, "tid": tid,
                  "ts": step_start - 5, "dur": t - step_start + 5, "args": {}})
            t += 10
        f.write("\n]}\n")


if __name__ == "__main__":
    main()
