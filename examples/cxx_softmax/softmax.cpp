// Softmax over each row of a 2-D tensor, with a torch::zeros scratch row and expf
// from the runtime's libm.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <torch/torch.h>

torch::Tensor softmax(const torch::Tensor& t_in) {
    int64_t rows = t_in.size(0);
    int64_t cols = t_in.size(1);
    torch::Tensor t_out = torch::empty(t_in.sizes(), torch::kFloat);
    torch::Tensor scratch = torch::zeros({cols}, torch::kFloat);

    auto in = t_in.accessor<float, 2>();
    auto out = t_out.accessor<float, 2>();
    auto e = scratch.accessor<float, 1>();
    for (int64_t r = 0; r < rows; r++) {
        float largest = in[r][0];
        for (int64_t c = 1; c < cols; c++) {
            largest = fmaxf(largest, in[r][c]);
        }
        float sum = 0.0f;
        for (int64_t c = 0; c < cols; c++) {
            e[c] = expf(in[r][c] - largest);
            sum += e[c];
        }
        for (int64_t c = 0; c < cols; c++) {
            out[r][c] = e[c] / sum;
        }
    }
    printf("softmax: %d rows of %d, row 0 starts %.6f\n", (int)rows, (int)cols, out[0][0]);
    return t_out;
}
