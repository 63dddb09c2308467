/*
 * wire.h: big-endian integers in and out of byte buffers, for the wire formats of proto/
 * (and anything else that frames bytes). Header-only, so that the installed libegress
 * needs no object for them. The caller has checked the bounds: these read and write
 * exactly 2 or 4 bytes at p.
 */
#ifndef EGRESS_WIRE_H
#define EGRESS_WIRE_H

#include <stdint.h>

static inline uint16_t
wire_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
wire_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void
wire_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
wire_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

#endif
