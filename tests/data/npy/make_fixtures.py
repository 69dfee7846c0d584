# Writes the numpy fixtures tests/test_tensor_file.cpp reads (numpy.save, default format).
# Run once from this folder with Debian's python3-numpy; the outputs are committed, so
# neither the build nor the tests need numpy.
import numpy as np

np.save("f4_2x3.npy", np.array([[0.5, -1.25, 3.0], [1e-3, -0.0, 65504.0]], dtype=np.float32))
np.save("i8_4.npy", np.array([-3, 0, 7, 1 << 40], dtype=np.int64))
np.save("b1_3.npy", np.array([True, False, True]))
np.save("f2_scalar.npy", np.float16(1.5))
np.save("u2_0x2.npy", np.zeros((0, 2), dtype=np.uint16))
