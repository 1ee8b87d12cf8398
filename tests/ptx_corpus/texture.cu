// Texture and surface objects.
__global__ void tex_sample(cudaTextureObject_t tex, float* out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}

__global__ void surf_write(cudaSurfaceObject_t surf, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) surf2Dwrite(float(x + y), surf, x * 4, y);
}

int main() { return 0; }
