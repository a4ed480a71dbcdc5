/* Gradient noise for terrain generation (our own, after Perlin's improved
 * noise: quintic fade, gradients from an integer hash of the lattice point
 * and the seed, so no permutation table and no state). Values in about
 * [-1, 1]; identical on every platform for the same inputs. */
#ifndef Q_NOISE_H
#define Q_NOISE_H

#include <stdint.h>

double q_noise2(uint64_t seed, double x, double y);
double q_noise3(uint64_t seed, double x, double y, double z);
/* Fractal sums: `octaves` layers, each at twice the frequency and `gain`
 * times the amplitude of the last, normalised back to about [-1, 1]. */
double q_fbm2(uint64_t seed, double x, double y, int octaves, double gain);
double q_fbm3(uint64_t seed, double x, double y, double z, int octaves, double gain);

#endif
