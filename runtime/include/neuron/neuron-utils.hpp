/*
 * <neuron/neuron-utils.hpp>: the core a kernel runs on, as the AWS Neuron custom-op
 * documentation declares it. get_cpu_id() is in [0, get_cpu_count()); the count is 8.
 */
#ifndef TORCHNEURON_NEURON_UTILS_HPP
#define TORCHNEURON_NEURON_UTILS_HPP
#include <stdint.h>
extern "C" {
uint32_t get_cpu_id(void);
uint32_t get_cpu_count(void);
}
#endif
