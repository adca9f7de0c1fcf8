"""The metric conventions, stated once in every report (DESIGN.md section 4)."""

CONVENTIONS = """<dl>
<dt>median us, p10, p90</dt><dd>Timing pass, per call, never under the profiler. CUDA: the
latency of one call started on an idle GPU, host work included: L2 flushed (cache=cold) and the
queue drained before each call, CUDA events around it. CPU: perf_counter_ns around each call,
with the thread count set explicitly and recorded. On a CPU, compile variants are built with
Inductor's cpp.enable_kernel_profile, so their C++ kernels show up in the profile by name.</dd>
<dt>1st call ms</dt><dd>Wall time of the first call: compilation, autotuning, JIT and cold caches.
For compile variants, compile_ms in measurements.csv is that minus one warm call.</dd>
<dt>host us</dt><dd>CPU span of the call's record_function range in the profiled run.</dd>
<dt>device us</dt><dd>CUDA: union of the kernel, memcpy and memset intervals launched in the step
(matched by correlation id). CPU: self time of the ops that compute (aten ops that are neither
metadata-only nor dispatch wrappers, and Inductor's cpp_fused kernels).</dd>
<dt>exposed overhead us</dt><dd>Time per call the device does no work for the call (Python,
dispatch, launches). CUDA: max(0, median - device us). CPU: median x (1 - device us / host us),
because the profiler adds a microsecond or two to every op and would swamp a small call; the
profiled share of compute is applied to the unprofiled median.</dd>
<dt>kernels</dt><dd>Device activities per call (kernels + memcpy + memset), not launch calls; on
a CPU, compute ops per call.</dd>
<dt>launch us</dt><dd>Sum of launch-call durations per call (cudaLaunchKernel, cudaLaunchKernelExC,
cuLaunchKernel, cuLaunchKernelEx, cudaGraphLaunch, cudaMemcpyAsync, cudaMemsetAsync).</dd>
<dt>TFLOP/s, GB/s</dt><dd>From the median time and the op's model (kernels/&lt;op&gt;.py): matmul+bias
2MNK + MN; linear 2·T·IN·OUT + T·OUT; GeGLU MLP 6·T·D·I; causal attention 4·B·H·S²·D × 0.5;
block QKV 6·T·D² + attention 2·B·H·S²·(D/H) + Wo 2·T·D² + MLP 6·T·D·I. Bytes = every input read
once and the output written once; "bytes (model)" adds the intermediates each form writes and
reads back, where the op models them.</dd>
<dt>% roofline</dt><dd>Achieved FLOP/s over min(peak FLOP/s, intensity x peak bandwidth), both
peaks measured on this machine at the start of the run (env.json).</dd>
<dt>speedup</dt><dd>Baseline median / variant median, same case.</dd>
<dt>error</dt><dd>Against a float64 reference on fresh random inputs: per output row,
max |out - ref| / max |ref| of the row; the worst row counts. A variant passes if this is at
most 2x the baseline's error in the same dtype plus a dtype floor (fp32 1e-5, fp16 1e-3,
bf16 8e-3).</dd>
<dt>overhead-bound</dt><dd>The device (on CPU: the compute ops) is busy less than half of the
profiled call, from its start until its host code and device work are both done. Otherwise
compute-bound or memory-bound by the roofline: the op's FLOP per byte against the measured
ridge point (peak FLOP/s / peak bandwidth).</dd>
</dl>
<p>Traces (<code>traces/*.json.gz</code>) open in <a href="https://ui.perfetto.dev">ui.perfetto.dev</a>
or chrome://tracing; the key_averages tables are in <code>tables/</code>.</p>"""
