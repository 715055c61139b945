// workgroup_sum: the sum of every thread's value over a workgroup of 256 threads (a tree in shared memory), seen by
// all of them. Every thread must call it (it has barriers). For instance_norm.comp and
// instance_norm_statistics.comp.
shared float partial[256];

float workgroup_sum(float value) {
  const uint t = gl_LocalInvocationID.x;
  partial[t] = value;
  barrier();
  for (uint stride = 128; stride > 0; stride >>= 1) {
    if (t < stride) partial[t] += partial[t + stride];
    barrier();
  }
  const float total = partial[0];
  barrier();  // every thread has read partial[0] before the next sum overwrites it
  return total;
}
