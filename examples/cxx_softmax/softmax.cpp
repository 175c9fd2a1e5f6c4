// Softmax over each row of a 2-D tensor, with a torch::zeros scratch row and expf
// from the runtime's libm. The loop counters are `int`: on these 32-bit cores an
// int64_t counter costs a 64-bit compare per element (docs/op-author-guide.md).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <torch/torch.h>

torch::Tensor softmax(const torch::Tensor& t_in) {
    int rows = (int)t_in.size(0);
    int cols = (int)t_in.size(1);
    torch::Tensor t_out = torch::empty(t_in.sizes(), torch::kFloat);
    torch::Tensor scratch = torch::zeros({cols}, torch::kFloat);

    auto in = t_in.accessor<float, 2>();
    auto out = t_out.accessor<float, 2>();
    auto e = scratch.accessor<float, 1>();
    for (int r = 0; r < rows; r++) {
        float largest = in[r][0];
        for (int c = 1; c < cols; c++) {
            largest = fmaxf(largest, in[r][c]);
        }
        float sum = 0.0f;
        for (int c = 0; c < cols; c++) {
            e[c] = expf(in[r][c] - largest);
            sum += e[c];
        }
        for (int c = 0; c < cols; c++) {
            out[r][c] = e[c] / sum;
        }
    }
    printf("softmax: %d rows of %d, row 0 starts %.6f\n", rows, cols, out[0][0]);
    return t_out;
}
