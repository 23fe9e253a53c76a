"""Tiny pipelines of the real diffusers, transformers and accelerate, built from configs with
random weights (nothing is downloaded: the tokenizer is a word-level one made here).

Needs the pinned releases of the torch 2 test environment (scripts/setup.sh makes it); the
tests that use this module skip themselves where those packages are missing."""

import torch

WORDS = ("a cat dog runs jumps on the beach at sunset in snow red blue green video of and slow "
         "motion city night").split()
TEXT_LEN = 16


def tokenizer(max_length=TEXT_LEN):
    """A word-level fast tokenizer with T5's special tokens (pad 0, eos 1, unk 2)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for word in WORDS:
        vocab.setdefault(word, len(vocab))
    inner = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    inner.pre_tokenizer = pre_tokenizers.Whitespace()
    inner.post_processor = processors.TemplateProcessing(single="$A </s>",
                                                         special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=inner, pad_token="<pad>", eos_token="</s>",
                                   unk_token="<unk>", model_max_length=max_length)


def umt5(dim=16):
    from transformers import UMT5Config, UMT5EncoderModel

    return UMT5EncoderModel(UMT5Config(vocab_size=32, d_model=dim, d_kv=4, d_ff=32, num_layers=1,
                                       num_heads=2, relative_attention_num_buckets=8))


def t5(dim=32):
    from transformers import T5Config, T5EncoderModel

    return T5EncoderModel(T5Config(vocab_size=32, d_model=dim, d_kv=8, d_ff=32, num_layers=1,
                                   num_heads=4, relative_attention_num_buckets=8))


# The text length the Wan transformers built here advertise (`text_len`, as Wan's own code does),
# or None: as diffusers builds them, saying none (vxperf then reads it off their calls). The side
# by side scenarios (real_scenarios.py) set it, so that the reference, which cannot read it off a
# call, prices their cross-attention too.
ADVERTISED_TEXT_LEN = None


def wan_transformer(in_channels=16, layers=2, seed=None):
    model = _wan_transformer(in_channels, layers, seed)
    if ADVERTISED_TEXT_LEN is not None:
        model.text_len = ADVERTISED_TEXT_LEN
    return model


def _wan_transformer(in_channels, layers, seed):
    from diffusers import WanTransformer3DModel

    if seed is not None:
        torch.manual_seed(seed)
    return WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=8,
                                 in_channels=in_channels, out_channels=16, text_dim=16,
                                 freq_dim=32, ffn_dim=32, num_layers=layers, cross_attn_norm=True,
                                 qk_norm="rms_norm_across_heads", rope_max_seq_len=32)


def accelerate_micro_step(accelerator, model, optimizer, latents, text):
    """One micro-step of a wan_transformer() as diffusers' training examples write it: under
    accelerator.accumulate(), an MSE loss on the output, backward, clip_grad_norm_ on the step that
    syncs the gradients, the optimizer's step and zero_grad. Returns the loss."""
    with accelerator.accumulate(model):
        t = torch.randint(0, 1000, (latents.shape[0],))
        out = model(hidden_states=latents, timestep=t, encoder_hidden_states=text).sample
        loss = torch.nn.functional.mse_loss(out.float(), latents)
        accelerator.backward(loss)
        if accelerator.sync_gradients:
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    return loss


def wan_vae():
    from diffusers import AutoencoderKLWan

    return AutoencoderKLWan(base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
                            temperal_downsample=[False, True, True])


def quiet(pipe):
    """No progress bar on stderr (the tests read what vxperf says there)."""
    pipe.set_progress_bar_config(disable=True)
    return pipe


def wan(seed=0):
    """Wan 2.1-style text-to-video: UMT5, one transformer, the 3D VAE."""
    from diffusers import FlowMatchEulerDiscreteScheduler, WanPipeline

    torch.manual_seed(seed)
    return quiet(WanPipeline(tokenizer=tokenizer(), text_encoder=umt5(), vae=wan_vae(),
                             scheduler=FlowMatchEulerDiscreteScheduler(shift=7.0),
                             transformer=wan_transformer()))


def wan22_i2v(seed=0):
    """Wan 2.2-style image-to-video: two transformers split at a boundary, the image encoded by
    the VAE (no image encoder)."""
    from diffusers import FlowMatchEulerDiscreteScheduler, WanImageToVideoPipeline

    torch.manual_seed(seed)
    return quiet(WanImageToVideoPipeline(
        tokenizer=tokenizer(), text_encoder=umt5(), vae=wan_vae(),
        scheduler=FlowMatchEulerDiscreteScheduler(shift=7.0),
        transformer=wan_transformer(in_channels=36), transformer_2=wan_transformer(in_channels=36),
        boundary_ratio=0.5))


def cogvideox(seed=0):
    from diffusers import (AutoencoderKLCogVideoX, CogVideoXDDIMScheduler, CogVideoXPipeline,
                           CogVideoXTransformer3DModel)

    torch.manual_seed(seed)
    transformer = CogVideoXTransformer3DModel(
        num_attention_heads=4, attention_head_dim=8, in_channels=4, out_channels=4,
        time_embed_dim=2, text_embed_dim=32, num_layers=1, sample_width=2, sample_height=2,
        sample_frames=9, patch_size=2, temporal_compression_ratio=4,
        max_text_seq_length=TEXT_LEN)
    vae = AutoencoderKLCogVideoX(
        in_channels=3, out_channels=3, down_block_types=("CogVideoXDownBlock3D",) * 4,
        up_block_types=("CogVideoXUpBlock3D",) * 4, block_out_channels=(8, 8, 8, 8),
        latent_channels=4, layers_per_block=1, norm_num_groups=2, temporal_compression_ratio=4)
    return quiet(CogVideoXPipeline(tokenizer=tokenizer(), text_encoder=t5(), vae=vae,
                                   transformer=transformer, scheduler=CogVideoXDDIMScheduler()))


# One call of each pipeline, as small as it runs: 5 frames of 16x16 (2 latent frames of 8x8, 32
# tokens with a 2x2 patch), two denoising steps, guidance on unless said.
WAN_CALL = dict(height=16, width=16, num_frames=5, num_inference_steps=2,
                max_sequence_length=TEXT_LEN, output_type="np")
COG_CALL = dict(height=16, width=16, num_frames=8, num_inference_steps=2,
                max_sequence_length=TEXT_LEN, output_type="pt", guidance_scale=6.0)


def image(seed=0):
    from PIL import Image

    generator = torch.Generator().manual_seed(seed)
    pixels = (torch.rand(16, 16, 3, generator=generator) * 255).to(torch.uint8).numpy()
    return Image.fromarray(pixels)
