#!/usr/bin/env python3
"""Reference for test_registry: sd.cpp's version detection, restated in Python.

This follows the procedure of stable-diffusion.cpp 97d2990 ModelLoader::get_sd_version
(src/model_loader.cpp) as it is written there -- one pass over the tensors in file order with
substring tests, early returns for most DiT families, flags for Flux / Flux.2 / Wan / UNets and a
decision after the pass -- not the rule table of sdc's registry. Running it over every
tests/data/registry/*.txt list writes sdcpp_versions.tsv ("<list file>\\t<SDVersion name>"), which
test_registry compares with what the registry detects.

Run: python3 tests/data/registry/sdcpp_reference.py
"""
import os
import sys

DIR = os.path.dirname(os.path.abspath(__file__))
DM = 'model.diffusion_model.'
TOKEN_EMBEDDINGS = {
    'cond_stage_model.transformer.text_model.embeddings.token_embedding.weight',
    'cond_stage_model.model.token_embedding.weight',
    'text_model.embeddings.token_embedding.weight',
    'te.text_model.embeddings.token_embedding.weight',
    'conditioner.embedders.0.model.token_embedding.weight',
    'conditioner.embedders.0.transformer.text_model.embeddings.token_embedding.weight',
}


def read_list(path):
    """[(name, ne)] in file order; ne in ggml order, dims past 4 folded into ne[3]."""
    out = []
    for line in open(path):
        if line.startswith('#') or not line.strip():
            continue
        parts = line.split()
        shape = [int(x) for x in parts[1:]]
        ne = list(reversed(shape)) + [1] * 4
        if len(shape) > 4:
            folded = 1
            for x in shape[:len(shape) - 3]:
                folded *= x
            ne = list(reversed(shape[len(shape) - 3:])) + [folded]
        out.append((parts[0], ne[:4]))
    return out


def sd_version(tensors):
    names = {n: ne for n, ne in tensors}
    f = dict(multi=False, unet=False, xl=False, flux=False, flux2=False, has47=False, wan=False,
             img_emb=False, mb1=False, ob311=False, ob71=False, attn1024=False)
    patch_ch = 0
    token = inp = ctx = None
    for n, ne in tensors:
        has = n.__contains__
        if has(DM + 'double_blocks.') or has(DM + 'single_transformer_blocks.'):
            f['flux'] = True
        if has(DM + 'net.lq_proj.latent_proj.0.weight'):
            return 'PID'
        if has('embed_image_indicator.weight'):
            return 'IDEOGRAM4'
        if has(DM + 'txtfusion.projector.weight') or has(DM + 'text_fusion.projector.weight'):
            return 'KREA2'
        if has(DM + 'nerf_final_layer_conv.'):
            return 'CHROMA_RADIANCE'
        if has(DM + 'joint_blocks.'):
            return 'SD3'
        if has('model.x_embedder.proj1.weight') and \
                'model.language_model.layers.0.self_attn.q_proj.weight' in names:
            return 'HIDREAM_O1'
        if has(DM + 'transformer_blocks.0.attn.norm_added_q.weight') and \
                DM + 'transformer_blocks.0.img_mlp.w1.weight' in names:
            return 'LENS'
        if has('net.img_embedder.proj1.weight'):
            return 'MINIT2I'
        if has(DM + 'transformer_blocks.0.img_mod.1.weight'):
            img_in = names.get(DM + 'img_in.weight')
            if img_in and img_in[0] == 128:
                return 'MAGE_FLOW'
            if DM + 'time_text_embed.addition_t_embedding.weight' in names:
                return 'QWEN_IMAGE_LAYERED'
            return 'QWEN_IMAGE'
        if has(DM + 'txt_in.individual_token_refiner.blocks.0.adaLN_modulation.1.weight'):
            return 'HUNYUAN_VIDEO'
        if has('llm_adapter.blocks.0.cross_attn.q_proj.weight'):
            return 'ANIMA'
        if has(DM + 'double_stream_modulation_img.lin.weight'):
            f['flux2'] = True
        if has('dual_time_embed.semantic_embedder.linear_1.weight'):
            return 'SEFI_IMAGE'
        if has('single_blocks.47.linear1.weight'):
            f['has47'] = True
        if has(DM + 'double_blocks.0.img_mlp.gate_proj.weight'):
            return 'OVIS_IMAGE'
        if has(DM + 'cap_embedder.0.weight'):
            return 'Z_IMAGE'
        if has('double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight'):
            return 'BOOGU_IMAGE'
        if has(DM + 'layers.0.adaLN_sa_ln.weight'):
            return 'ERNIE_IMAGE'
        if has(DM + 'adaln_single.emb.timestep_embedder.linear_1.bias'):
            return 'LTXAV'
        if has(DM + 'video_patch_proj.weight') and DM + 'audio_patch_proj.weight' in names:
            return 'MINIMAX_H3'
        if has(DM + 'blocks.0.cross_attn.norm_k.weight'):
            f['wan'] = True
        if has(DM + 'patch_embedder.weight'):
            return 'LINGBOT_VIDEO'
        if has(DM + 'patch_embedding.weight'):
            patch_ch = ne[3]
        if has(DM + 'img_emb'):
            f['img_emb'] = True
        if has(DM + 'input_blocks.') or has('unet.down_blocks.'):
            f['unet'] = True
            if f['multi']:
                f['xl'] = True
        if has('conditioner.embedders.1') or has('cond_stage_model.1') or has('te.1'):
            f['multi'] = True
            if f['unet']:
                f['xl'] = True
        if has(DM + 'input_blocks.8.0.time_mixer.mix_factor'):
            return 'SVD'
        if has(DM + 'middle_block.1.') or has('unet.mid_block.resnets.1.'):
            f['mb1'] = True
        if has(DM + 'output_blocks.3.1.transformer_blocks.1') or \
                has('unet.up_blocks.1.attentions.0.transformer_blocks.1'):
            f['ob311'] = True
        if has(DM + 'output_blocks.7.1') or has('unet.up_blocks.2.attentions.1'):
            f['ob71'] = True
            if has(DM + 'output_blocks.7.1.transformer_blocks.0.attn1.to_k.weight') and ne[0] == 1024:
                f['attn1024'] = True
        if n in TOKEN_EMBEDDINGS:
            token = ne
        if n in (DM + 'input_blocks.0.0.weight', DM + 'img_in.weight', 'unet.conv_in.weight'):
            inp = ne
        if n in (DM + 'txt_in.weight', DM + 'context_embedder.weight'):
            ctx = ne
    if f['wan']:
        if patch_ch == 184320 and not f['img_emb']:
            return 'WAN2_2_I2V'
        if patch_ch == 147456 and not f['img_emb']:
            return 'WAN2_2_TI2V'
        return 'WAN2'
    inpaint = inp is not None and inp[2] == 9
    ip2p = inp is not None and inp[2] == 8
    if f['xl']:
        if inpaint:
            return 'SDXL_INPAINT'
        if ip2p:
            return 'SDXL_PIX2PIX'
        if not f['mb1']:
            return 'SDXL_SSD1B' if f['ob311'] else 'SDXL_VEGA'
        return 'SDXL'
    if f['flux'] and not f['flux2']:
        if ctx is not None and ctx[0] == 3584:
            return 'LONGCAT'
        w = inp[0] if inp is not None else 0
        return {384: 'FLUX_FILL', 128: 'FLUX_CONTROLS', 196: 'FLEX_2'}.get(w, 'FLUX')
    if f['flux2']:
        return 'FLUX2' if f['has47'] else 'FLUX2_KLEIN'
    width = token[0] if token is not None else 0
    if width == 768:
        if inpaint:
            return 'SD1_INPAINT'
        if ip2p:
            return 'SD1_PIX2PIX'
        if not f['mb1']:
            return 'SD1_TINY_UNET' if f['ob71'] else 'SDXS_512_DS'
        return 'SD1'
    if width == 1024:
        if inpaint:
            return 'SD2_INPAINT'
        if not f['mb1']:
            return 'SDXS_09' if f['attn1024'] else 'SD2_TINY_UNET'
        return 'SD2'
    return 'COUNT'


def main():
    rows = []
    for fn in sorted(os.listdir(DIR)):
        if fn.endswith('.txt'):
            rows.append('%s\t%s' % (fn, sd_version(read_list(os.path.join(DIR, fn)))))
    with open(os.path.join(DIR, 'sdcpp_versions.tsv'), 'w') as out:
        out.write('# list file -> sd.cpp SDVersion (VERSION_ prefix dropped), from sdcpp_reference.py\n')
        out.write('\n'.join(rows) + '\n')
    print('\n'.join(rows), file=sys.stderr)


if __name__ == '__main__':
    main()
