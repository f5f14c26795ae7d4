//! The packed model's linear layers as int8 products, on x86-64 CPUs with AVX2 and FMA.
//!
//! Its place in the flow: [`super::Encoder`] keeps each weight matrix of a packed model
//! ([`super::pack`]) as int8 with one scale per output when [`available`] says this CPU
//! runs [`product`], and as f32 for `gemm` otherwise.
//!
//! Why: a query is about ten tokens, so its forward pass is bound by reading the
//! weights (42 MB as f32 for the six layers, re-packed by `gemm` on every product), not
//! by arithmetic. As int8 they are 11 MB, each matrix small enough to stay in the
//! core's L2 cache while every row of the text passes over it. Measured by
//! `host/benches/search.rs`.
//!
//! The product: for each block of 16 outputs (two vectors of eight), for each tile of
//! up to four rows, eight accumulators gather `x[r][i] · q[i][o]` over the inputs, the
//! int8 weights widened to f32 as they are read; each output is then scaled and biased.

/// Outputs per block: two AVX vectors of eight f32 (with four rows, eight accumulators:
/// three vectors of twelve spilled one to the stack, measured).
pub const BLOCK: usize = 16;

/// Rows of the text handed to the kernel at a time, so that their inputs stay in cache
/// while every block of outputs passes over them.
const ROW_CHUNK: usize = 64;

/// True when this CPU runs [`product`] (x86-64 with AVX2 and FMA).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `y (rows × outputs) = x (rows × inputs) · (q · diag(scales)) + bias`, with `q` int8
/// stored input × output, `outputs = bias.len()`.
///
/// # Panics
/// When this CPU lacks AVX2 or FMA ([`available`]), when `outputs` is not a multiple of
/// [`BLOCK`], or when a slice's length does not match the sizes.
pub fn product(x: &[f32], rows: usize, inputs: usize, q: &[i8], scales: &[f32], bias: &[f32], y: &mut Vec<f32>) {
    let outputs = bias.len();
    assert!(available(), "the int8 product needs AVX2 and FMA");
    assert!(outputs.is_multiple_of(BLOCK), "{outputs} outputs are not whole blocks of {BLOCK}");
    assert_eq!(q.len(), inputs * outputs, "the weights are not inputs × outputs");
    assert_eq!(scales.len(), outputs, "one scale per output");
    assert_eq!(x.len(), rows * inputs, "the rows are not rows × inputs");
    y.clear();
    y.resize(rows * outputs, 0.0);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX2 and FMA (asserted above), and every slice has the size
    // the kernel reads or writes (asserted above): `x` rows × inputs, `q` inputs ×
    // outputs, `scales` and `bias` outputs, `y` rows × outputs.
    unsafe {
        avx2::product(x, rows, inputs, outputs, q, scales, bias, y);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, _mm256_cvtepi32_ps, _mm256_cvtepi8_epi32, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_set1_ps,
        _mm256_setzero_ps, _mm256_storeu_ps, _mm_loadl_epi64,
    };

    use super::{BLOCK, ROW_CHUNK};

    /// See [`super::product`].
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; `x` holds rows × inputs values, `q` inputs × outputs,
    /// `scales` and `bias` outputs, `y` rows × outputs, and outputs is a multiple of
    /// [`BLOCK`].
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn product(
        x: &[f32],
        rows: usize,
        inputs: usize,
        outputs: usize,
        q: &[i8],
        scales: &[f32],
        bias: &[f32],
        y: &mut [f32],
    ) {
        let shape = Shape { inputs, outputs };
        for chunk in (0..rows).step_by(ROW_CHUNK) {
            let end = (chunk + ROW_CHUNK).min(rows);
            for block in (0..outputs).step_by(BLOCK) {
                let mut row = chunk;
                while row < end {
                    let left = end - row;
                    // SAFETY: rows row..row+R (R <= left) and outputs block..block+16
                    // are within the sizes the caller vouched for.
                    unsafe {
                        match left {
                            1 => tile::<1>(shape, x, q, scales, bias, y, row, block),
                            2 => tile::<2>(shape, x, q, scales, bias, y, row, block),
                            3 => tile::<3>(shape, x, q, scales, bias, y, row, block),
                            _ => tile::<4>(shape, x, q, scales, bias, y, row, block),
                        }
                    };
                    row += left.min(4);
                }
            }
        }
    }

    #[derive(Clone, Copy)]
    struct Shape {
        inputs: usize,
        outputs: usize,
    }

    /// Outputs `block..block + 16` of rows `row..row + R`.
    ///
    /// # Safety
    /// As [`product`], with `row + R <= rows` and `block + 16 <= outputs`.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    #[inline]
    unsafe fn tile<const R: usize>(
        shape: Shape,
        x: &[f32],
        q: &[i8],
        scales: &[f32],
        bias: &[f32],
        y: &mut [f32],
        row: usize,
        block: usize,
    ) {
        let Shape { inputs, outputs } = shape;
        let mut low = [_mm256_setzero_ps(); R];
        let mut high = [_mm256_setzero_ps(); R];
        let (x, q, y) = (x.as_ptr(), q.as_ptr(), y.as_mut_ptr());
        for i in 0..inputs {
            // SAFETY: q[i·outputs + block ..+16] lies within the inputs × outputs
            // weights (block + 16 <= outputs); each load reads 8 bytes of them.
            let (w_low, w_high) = unsafe {
                let at = q.add(i * outputs + block);
                (
                    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(at.cast::<__m128i>()))),
                    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(at.add(8).cast::<__m128i>()))),
                )
            };
            for r in 0..R {
                // SAFETY: row + r < rows, i < inputs: within x.
                let v = _mm256_set1_ps(unsafe { *x.add((row + r) * inputs + i) });
                low[r] = _mm256_fmadd_ps(v, w_low, low[r]);
                high[r] = _mm256_fmadd_ps(v, w_high, high[r]);
            }
        }
        // SAFETY: block + 16 <= outputs: within scales, bias, and rows row..row+R of y.
        unsafe {
            let (scale_low, scale_high) =
                (_mm256_loadu_ps(scales.as_ptr().add(block)), _mm256_loadu_ps(scales.as_ptr().add(block + 8)));
            let (bias_low, bias_high) =
                (_mm256_loadu_ps(bias.as_ptr().add(block)), _mm256_loadu_ps(bias.as_ptr().add(block + 8)));
            for r in 0..R {
                let out = y.add((row + r) * outputs + block);
                _mm256_storeu_ps(out, _mm256_fmadd_ps(low[r], scale_low, bias_low));
                _mm256_storeu_ps(out.add(8), _mm256_fmadd_ps(high[r], scale_high, bias_high));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel against the plain sum, for every tile shape (rows 1 to 9, so both
    /// tiles and the remainder), with weights and inputs of both signs.
    #[test]
    fn the_product_is_the_plain_sum() {
        if !available() {
            eprintln!("no AVX2 and FMA here: the int8 product is not used on this CPU");
            return;
        }
        let (inputs, outputs) = (37, 48);
        assert_eq!(outputs % BLOCK, 0);
        let q: Vec<i8> = (0..inputs * outputs).map(|k| ((k * 37 + 11) % 255) as i32 - 127).map(|v| v as i8).collect();
        let scales: Vec<f32> = (0..outputs).map(|o| 0.01 + o as f32 * 0.001).collect();
        let bias: Vec<f32> = (0..outputs).map(|o| o as f32 * 0.5 - 3.0).collect();
        for rows in 1..=9 {
            let x: Vec<f32> = (0..rows * inputs).map(|k| ((k * 13) % 17) as f32 / 8.0 - 1.0).collect();
            let mut y = Vec::new();
            product(&x, rows, inputs, &q, &scales, &bias, &mut y);
            for r in 0..rows {
                for o in 0..outputs {
                    let want = bias[o]
                        + scales[o]
                            * (0..inputs).map(|i| x[r * inputs + i] * f32::from(q[i * outputs + o])).sum::<f32>();
                    let got = y[r * outputs + o];
                    assert!(
                        (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                        "rows {rows}, y[{r}][{o}] = {got}, want {want}"
                    );
                }
            }
        }
    }
}
