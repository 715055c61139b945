// Tensor bindings whose elements are fp32, or fp16 in the half-precision variant of a kernel.
//
// kernels/CMakeLists.txt compiles some kernels twice: as themselves (fp32 only) and as <kernel>_fp16 with
// TENSOR_FP16 defined. In the _fp16 variant a tensor binding holds fp16 or fp32 as a specialization constant
// says (a model's input and outputs stay fp32 on the host; its device-only intermediates are fp16), and the
// arithmetic stays fp32. The fp32 variant declares no 16-bit type, so it needs no 16-bit storage feature.
//
//   TENSOR_INPUT(0, source, 20)   // binding 0, read as load_source(i), fp16 when constant 20 is true
//   TENSOR_OUTPUT(3, result, 21)  // binding 3, written as store_result(i, value)
#ifdef TENSOR_FP16
#extension GL_EXT_shader_16bit_storage : require

#define TENSOR_INPUT(binding_, name, constant_)                                    \
  layout(constant_id = constant_) const bool name##_fp16 = false;                 \
  layout(binding = binding_) readonly buffer name##Fp32 { float name##_f32[]; };  \
  layout(binding = binding_) readonly buffer name##Fp16 { float16_t name##_f16[]; }; \
  float load_##name(uint i) { return name##_fp16 ? float(name##_f16[i]) : name##_f32[i]; }

#define TENSOR_OUTPUT(binding_, name, constant_)                                    \
  layout(constant_id = constant_) const bool name##_fp16 = false;                  \
  layout(binding = binding_) writeonly buffer name##Fp32 { float name##_f32[]; };  \
  layout(binding = binding_) writeonly buffer name##Fp16 { float16_t name##_f16[]; }; \
  void store_##name(uint i, float value) {                                         \
    if (name##_fp16) {                                                              \
      name##_f16[i] = float16_t(value);                                            \
    } else {                                                                        \
      name##_f32[i] = value;                                                        \
    }                                                                               \
  }

#else

#define TENSOR_INPUT(binding_, name, constant_)                                   \
  layout(binding = binding_) readonly buffer name##Fp32 { float name##_f32[]; }; \
  float load_##name(uint i) { return name##_f32[i]; }

#define TENSOR_OUTPUT(binding_, name, constant_)                                   \
  layout(binding = binding_) writeonly buffer name##Fp32 { float name##_f32[]; }; \
  void store_##name(uint i, float value) { name##_f32[i] = value; }

#endif
