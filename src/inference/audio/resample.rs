//! Sample-rate conversion with rubato's band-limited FFT resampler: [`resample`] for a clip in
//! memory, [`StreamResampler`] for audio that arrives block by block (a long file being
//! decoded), which gives the same samples without holding the whole clip.

use rubato::{
    Fft, FixedSync, Indexing, Resampler,
    audioadapter_buffers::direct::{InterleavedSlice, SequentialSliceOfVecs},
};

use super::{Audio, AudioError};

/// Input frames per resampler call.
const CHUNK: usize = 1024;

fn err(e: &dyn std::fmt::Display) -> AudioError {
    AudioError::Resample(e.to_string())
}

/// Resamples a whole clip to `rate`; audio already at `rate` is returned as is.
pub fn resample(audio: Audio, rate: u32) -> Result<Vec<f32>, AudioError> {
    if audio.sample_rate == rate {
        return Ok(audio.samples);
    }
    let len = audio.samples.len();
    let mut resampler =
        Fft::<f32>::new(audio.sample_rate as usize, rate as usize, CHUNK, 1, FixedSync::Input).map_err(|e| err(&e))?;
    let channels = [audio.samples];
    let input = SequentialSliceOfVecs::new(&channels, 1, len).map_err(|e| err(&e))?;
    let out = resampler.process_all(&input, len, None).map_err(|e| err(&e))?;
    Ok(out.take_data())
}

/// Resamples mono audio fed in blocks of any size. The output is trimmed of the resampler's
/// startup delay and, after [`StreamResampler::finish`], is as long as the input times the rate
/// ratio (rounded up).
pub struct StreamResampler {
    resampler: Option<Fft<f32>>,
    from: u64,
    to: u64,
    pending: Vec<f32>,
    to_trim: usize,
    fed: u64,
    produced: u64,
}

impl std::fmt::Debug for StreamResampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamResampler")
            .field("from", &self.from)
            .field("to", &self.to)
            .field("fed", &self.fed)
            .finish()
    }
}

impl StreamResampler {
    /// From `from` Hz to `to` Hz (equal rates pass samples through untouched).
    pub fn new(from: u32, to: u32) -> Result<Self, AudioError> {
        let resampler = if from == to {
            None
        } else {
            Some(Fft::<f32>::new(from as usize, to as usize, CHUNK, 1, FixedSync::Input).map_err(|e| err(&e))?)
        };
        let to_trim = resampler.as_ref().map_or(0, |r| r.output_delay());
        Ok(Self {
            resampler,
            from: u64::from(from),
            to: u64::from(to),
            pending: Vec::new(),
            to_trim,
            fed: 0,
            produced: 0,
        })
    }

    /// Feeds a block; returns the output that is ready.
    pub fn push(&mut self, block: &[f32]) -> Result<Vec<f32>, AudioError> {
        self.fed += block.len() as u64;
        let Some(resampler) = self.resampler.as_mut() else {
            self.produced += block.len() as u64;
            return Ok(block.to_vec());
        };
        self.pending.extend_from_slice(block);
        let mut out = Vec::new();
        let mut used = 0;
        while self.pending.len() - used >= resampler.input_frames_next() {
            let n = resampler.input_frames_next();
            let input = InterleavedSlice::new(&self.pending[used..used + n], 1, n).map_err(|e| err(&e))?;
            let piece = resampler.process(&input, None).map_err(|e| err(&e))?.take_data();
            used += n;
            Self::keep(&mut out, piece, &mut self.to_trim);
        }
        self.pending.drain(..used);
        self.produced += out.len() as u64;
        Ok(out)
    }

    /// Flushes the last samples at the end of the input.
    pub fn finish(&mut self) -> Result<Vec<f32>, AudioError> {
        let Some(resampler) = self.resampler.as_mut() else { return Ok(Vec::new()) };
        // Exactly rounded up (a float ratio can make 10 s at 44.1 kHz one sample too long).
        let expected = (self.fed * self.to).div_ceil(self.from);
        let mut out = Vec::new();
        let mut pending = std::mem::take(&mut self.pending);
        // Pump the partial chunk, then silence, until the delayed tail has come out.
        while self.produced + (out.len() as u64) < expected {
            let n = resampler.input_frames_next();
            let valid = pending.len().min(n);
            pending.resize(n, 0.0);
            let input = InterleavedSlice::new(&pending[..], 1, n).map_err(|e| err(&e))?;
            let indexing =
                Indexing { input_offset: 0, output_offset: 0, partial_len: Some(valid), active_channels_mask: None };
            let piece = resampler.process(&input, Some(&indexing)).map_err(|e| err(&e))?.take_data();
            pending.clear();
            Self::keep(&mut out, piece, &mut self.to_trim);
        }
        out.truncate(expected.saturating_sub(self.produced) as usize);
        self.produced += out.len() as u64;
        Ok(out)
    }

    fn keep(out: &mut Vec<f32>, piece: Vec<f32>, to_trim: &mut usize) {
        let skip = (*to_trim).min(piece.len());
        *to_trim -= skip;
        out.extend_from_slice(&piece[skip..]);
    }
}
