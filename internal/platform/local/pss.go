package local

import "github.com/meshbench/meshbench/internal/measure/sample"

// pssEvery is the sampler's PSSEvery: Options.PSSEvery, or when that is 0
// or less, the number of rounds closest to sample.DefaultPSSPeriod (5 s)
// at SampleInterval, at least 1.
func (o *Options) pssEvery() int {
	if o.PSSEvery > 0 {
		return o.PSSEvery
	}
	return sample.PSSEveryFor(o.SampleInterval, sample.DefaultPSSPeriod)
}
