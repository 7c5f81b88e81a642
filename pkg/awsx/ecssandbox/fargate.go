package ecssandbox

import "fmt"

// fargateSize rounds a task's requested CPUs and memory up to the smallest
// valid Fargate combination (CPU units, MiB).
func fargateSize(cpus float64, memoryMB int) (cpu, memory int, err error) {
	units := int(cpus * 1024)
	type tier struct{ cpu, minMem, maxMem, step int }
	tiers := []tier{
		{256, 512, 2048, 512}, // 512, 1024, 2048 (1536 is not offered; rounded below)
		{512, 1024, 4096, 1024},
		{1024, 2048, 8192, 1024},
		{2048, 4096, 16384, 1024},
		{4096, 8192, 30720, 1024},
		{8192, 16384, 61440, 4096},
		{16384, 32768, 122880, 8192},
	}
	for _, t := range tiers {
		if units > t.cpu || memoryMB > t.maxMem {
			continue
		}
		mem := max(memoryMB, t.minMem)
		if rem := (mem - t.minMem) % t.step; rem != 0 {
			mem += t.step - rem
		}
		if t.cpu == 256 && mem == 1536 {
			mem = 2048
		}
		return t.cpu, mem, nil
	}
	return 0, 0, fmt.Errorf("no Fargate size fits %.2f vCPU and %d MiB (max 16 vCPU, 120 GiB)", cpus, memoryMB)
}

// Fargate's ephemeral storage bounds, in GiB: a task gets 20 GiB unless its
// definition asks for 21 to 200.
const (
	defaultEphemeralGiB = 20
	maxEphemeralGiB     = 200
)

// ephemeralStorage is the ephemeral storage (GiB) a task definition asks
// for to hold storageMB, rounded up to a whole GiB; 0 when Fargate's
// default already holds it (the definition then asks for none).
func ephemeralStorage(storageMB int) (int, error) {
	gib := (storageMB + 1023) / 1024
	switch {
	case gib <= defaultEphemeralGiB:
		return 0, nil
	case gib > maxEphemeralGiB:
		return 0, fmt.Errorf("no Fargate ephemeral storage holds %d MiB (max %d GiB)", storageMB, maxEphemeralGiB)
	}
	return gib, nil
}
