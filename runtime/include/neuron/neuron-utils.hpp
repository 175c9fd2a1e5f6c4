/*
 * <neuron/neuron-utils.hpp>: the core a kernel runs on, as the AWS Neuron custom-op
 * documentation declares it. get_cpu_id() is in [0, get_cpu_count()); the count is 8.
 * Both are the runtime's C functions, declared in <neuroncustomop.h>.
 */
#ifndef TORCHNEURON_NEURON_UTILS_HPP
#define TORCHNEURON_NEURON_UTILS_HPP
#include <torchneuron/c_abi.h>
#endif
