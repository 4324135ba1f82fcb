#!/usr/bin/env python3
"""Writes the registry test lists (tests/data/registry/<entry>.txt) for test_registry.

Each list is one registry entry's tensors, names as sdc's loader holds them (-m: as in the file;
--diffusion-model: model.diffusion_model. added; --llm: text_encoders.llm.; --t5xxl:
text_encoders.t5xxl.transformer.; --vae: first_stage_model., sd.cpp's internal name), shapes in
PyTorch order. Each file's header says where its names and shapes come from:
- minit2i, sd1, qwen_image, qwen_image_layered: the golden data in /work/shared/golden (the real
  MiniT2I file's header; the generators make_sd1_random.py --list and make_qwen_image_random.py list);
- the other lists are assembled below from published checkpoint layouts and configs and from the
  block definitions of stable-diffusion.cpp 97d2990 (facts restated, no code copied).

Run: python3 tests/data/registry/make_lists.py   (needs /work/shared/golden for the first group)
"""
import json, os, re, struct, subprocess

GOLDEN = os.environ.get('SDC_GOLDEN', os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   '../../../../shared/golden'))
OUT = os.path.dirname(os.path.abspath(__file__)) + '/'


def fmt(name, shape):
    return name + ' ' + ' '.join(str(x) for x in shape)


def golden_lists():
    tools = os.path.join(GOLDEN, 'tools')
    path = os.path.join(GOLDEN, 'minit2i/minit2i_a_dit_f32.safetensors')
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        h = json.loads(f.read(n))
    L = ['# family: minit2i',
         '# source: /work/shared/golden/minit2i/minit2i_a_dit_f32.safetensors (header, every tensor), names as',
         '#   --diffusion-model loads them (model.diffusion_model. added); a tiny config (hidden 128) in the real layout',
         '# format: name then the shape in PyTorch order (as the safetensors header has it)']
    L += [fmt('model.diffusion_model.' + k, h[k]['shape']) for k in sorted(h) if k != '__metadata__']
    open(OUT + 'minit2i.txt', 'w').write('\n'.join(L) + '\n')

    lst = subprocess.run(['python3', os.path.join(tools, 'make_sd1_random.py'), '--list'],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    rows = []
    for line in lst:
        if line.startswith('#'):
            continue
        p = line.split('\t')
        rows.append((p[0], json.loads(p[2])))
    keep = re.compile(r'^(model\.diffusion_model\.(time_embed|input_blocks\.(0|1|3|11)\.|middle_block\.(0\.in_layers|'
                      r'1\.(proj_in|transformer_blocks\.0\.attn2))|output_blocks\.11\.1\.(proj_out|transformer_blocks\.0\.'
                      r'attn2\.to_k)|out\.)|cond_stage_model\.transformer\.text_model\.(embeddings|final_layer_norm|'
                      r'encoder\.layers\.11\.self_attn\.q_proj)|first_stage_model\.(decoder\.conv_in|decoder\.conv_out|'
                      r'encoder\.conv_in|quant_conv|post_quant_conv)|alphas_cumprod$)')
    sel = [r for r in rows if keep.match(r[0]) and not r[0].endswith('position_ids')]
    L = ['# family: sd1',
         '# source: /work/shared/golden/tools/make_sd1_random.py --list (the layout of v1-5-pruned-emaonly.safetensors,',
         '#   original single-file LDM names as -m loads them); a subset of its 1143 tensors',
         '# format: name then the shape in PyTorch order']
    L += [fmt(a, b) for a, b in sel]
    open(OUT + 'sd1.txt', 'w').write('\n'.join(L) + '\n')

    lst = subprocess.run(['python3', os.path.join(tools, 'make_qwen_image_random.py'), 'list'],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    parts = {}
    for line in lst:
        if line.startswith('#'):
            continue
        p = line.split('\t')
        parts.setdefault(p[0], []).append((p[1], json.loads(p[3])))
    for fam, dit, vae in (('qwen_image', 'qwen_image_dit', 'qwen_image_vae'),
                          ('qwen_image_layered', 'qwen_image_layered_dit', 'qwen_image_layered_vae')):
        L = ['# family: ' + fam,
             '# source: /work/shared/golden/tools/make_qwen_image_random.py list (ComfyUI/diffusers names, real widths,',
             '#   2 of 60 blocks); DiT as --diffusion-model loads it, Qwen2.5-VL as --llm (text_encoders.llm.), VAE as',
             "#   first_stage_model. (sd.cpp's name after --vae); layer/block 1 and most VAE tensors left out",
             '# format: name then the shape in PyTorch order']
        for a, b in parts[dit]:
            if a.startswith('transformer_blocks.1'):
                continue
            L.append(fmt('model.diffusion_model.' + a, b))
        for a, b in parts['qwen25vl_llm']:
            if 'layers.1.' in a:
                continue
            L.append(fmt('text_encoders.llm.' + a, b))
        for a, b in parts[vae]:
            if re.match(r'(conv1|conv2|decoder\.conv1|decoder\.head\.2|encoder\.conv1|encoder\.head\.2)\.', a):
                L.append(fmt('first_stage_model.' + a, b))
        open(OUT + fam + '.txt', 'w').write('\n'.join(L) + '\n')


golden_lists()

# ---- assembled lists ----
D='model.diffusion_model.'
SDCPP='leejet/stable-diffusion.cpp 97d2990'
def w(fam, src, rows, prefix='', family=None):
    L=['# family: '+(family or fam)]+['# source: '+src[0]]+['#   '+s for s in src[1:]]
    L.append('# format: name then the shape in PyTorch order (as a safetensors header has it)')
    for r in rows:
        name=r[0]; shape=r[1:]
        L.append(prefix+name+(' '+' '.join(str(x) for x in shape) if shape else ''))
    open(OUT+fam+'.txt','w').write('\n'.join(L)+'\n')

def lin(name,o,i,bias=True):
    r=[(name+'.weight',o,i)]
    if bias: r.append((name+'.bias',o))
    return r

# ---------------- text encoders / VAEs shared by several lists ----------------
def t5xxl(p='text_encoders.t5xxl.transformer.'):
    r=[('shared.weight',32128,4096),
       ('encoder.block.0.layer.0.SelfAttention.q.weight',4096,4096),
       ('encoder.block.0.layer.0.SelfAttention.k.weight',4096,4096),
       ('encoder.block.0.layer.0.SelfAttention.o.weight',4096,4096),
       ('encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight',32,64),
       ('encoder.block.0.layer.0.layer_norm.weight',4096),
       ('encoder.block.0.layer.1.DenseReluDense.wi_0.weight',10240,4096),
       ('encoder.block.0.layer.1.DenseReluDense.wi_1.weight',10240,4096),
       ('encoder.block.0.layer.1.DenseReluDense.wo.weight',4096,10240),
       ('encoder.block.23.layer.1.layer_norm.weight',4096),
       ('encoder.final_layer_norm.weight',4096)]
    return [(p+a,)+tuple(b) for a,*b in r]
def umt5(p='text_encoders.t5xxl.transformer.'):
    r=t5xxl(p)
    return [((p+'shared.weight'),256384,4096) if x[0]==p+'shared.weight' else x for x in r]
def clip_l(p):
    return [(p+'text_model.embeddings.token_embedding.weight',49408,768),
            (p+'text_model.embeddings.position_embedding.weight',77,768),
            (p+'text_model.encoder.layers.0.self_attn.q_proj.weight',768,768),
            (p+'text_model.encoder.layers.0.mlp.fc1.weight',3072,768),
            (p+'text_model.encoder.layers.11.mlp.fc2.weight',768,3072),
            (p+'text_model.final_layer_norm.weight',768)]
def clip_g(p, proj=True):
    r=[(p+'text_model.embeddings.token_embedding.weight',49408,1280),
       (p+'text_model.embeddings.position_embedding.weight',77,1280),
       (p+'text_model.encoder.layers.0.self_attn.q_proj.weight',1280,1280),
       (p+'text_model.encoder.layers.31.mlp.fc1.weight',5120,1280),
       (p+'text_model.final_layer_norm.weight',1280)]
    if proj: r.append((p+'text_projection.weight',1280,1280))
    return r
def openclip_text(p, width, layers, mlp):
    return [(p+'token_embedding.weight',49408,width),(p+'positional_embedding',77,width),
            (p+'transformer.resblocks.0.attn.in_proj_weight',3*width,width),
            (p+'transformer.resblocks.0.attn.in_proj_bias',3*width),
            (p+'transformer.resblocks.0.attn.out_proj.weight',width,width),
            (p+'transformer.resblocks.0.ln_1.weight',width),
            (p+'transformer.resblocks.0.mlp.c_fc.weight',mlp,width),
            (p+'transformer.resblocks.%d.mlp.c_proj.weight'%(layers-1),width,mlp),
            (p+'ln_final.weight',width),(p+'text_projection',width,width)]
def sd_vae(p='first_stage_model.', z=4):
    return [(p+'encoder.conv_in.weight',128,3,3,3),(p+'encoder.conv_out.weight',2*z,512,3,3),
            (p+'encoder.mid.attn_1.q.weight',512,512,1,1),
            (p+'decoder.conv_in.weight',512,z,3,3),(p+'decoder.up.3.block.0.conv1.weight',128,256,3,3),
            (p+'decoder.conv_out.weight',3,128,3,3)] + \
           ([(p+'quant_conv.weight',2*z,2*z,1,1),(p+'post_quant_conv.weight',z,z,1,1)] if z==4 else [])
def wan_vae(p='first_stage_model.', z=16, dim=96):
    return [(p+'encoder.conv1.weight',dim,3,3,3,3),(p+'encoder.head.2.weight',2*z,4*dim,3,3,3),
            (p+'conv1.weight',2*z,2*z,1,1,1),(p+'conv2.weight',z,z,1,1,1),
            (p+'decoder.conv1.weight',4*dim,z,3,3,3),(p+'decoder.head.2.weight',3,dim,3,3,3)]
def qwen_llm(p, hidden, layers, inter, vocab, heads, kv, qkbias=False, qknorm=False, hd=128):
    r=[(p+'model.embed_tokens.weight',vocab,hidden),
       (p+'model.layers.0.input_layernorm.weight',hidden),
       (p+'model.layers.0.self_attn.q_proj.weight',heads*hd,hidden),
       (p+'model.layers.0.self_attn.k_proj.weight',kv*hd,hidden),
       (p+'model.layers.0.self_attn.v_proj.weight',kv*hd,hidden),
       (p+'model.layers.0.self_attn.o_proj.weight',hidden,heads*hd),
       (p+'model.layers.0.mlp.gate_proj.weight',inter,hidden),
       (p+'model.layers.0.mlp.down_proj.weight',hidden,inter),
       (p+'model.layers.%d.post_attention_layernorm.weight'%(layers-1),hidden),
       (p+'model.norm.weight',hidden)]
    if qkbias: r.append((p+'model.layers.0.self_attn.q_proj.bias',heads*hd))
    if qknorm: r+= [(p+'model.layers.0.self_attn.q_norm.weight',hd),(p+'model.layers.0.self_attn.k_norm.weight',hd)]
    return r
LLM='text_encoders.llm.'
VAE='first_stage_model.'

# ---------------- SD2.x ----------------
def sd_unet(ctx, in_ch=4, linear_proj=False, adm=None):
    pr=(lambda n,c: [(n+'.weight',c,c)]) if linear_proj else (lambda n,c: [(n+'.weight',c,c,1,1)])
    r=[(D+'time_embed.0.weight',1280,320),(D+'time_embed.2.weight',1280,1280),
       (D+'input_blocks.0.0.weight',320,in_ch,3,3),(D+'input_blocks.0.0.bias',320),
       (D+'input_blocks.1.0.in_layers.2.weight',320,320,3,3),(D+'input_blocks.1.0.emb_layers.1.weight',320,1280),
       (D+'input_blocks.1.1.norm.weight',320)]+pr(D+'input_blocks.1.1.proj_in',320)+[
       (D+'input_blocks.1.1.transformer_blocks.0.attn1.to_q.weight',320,320),
       (D+'input_blocks.1.1.transformer_blocks.0.attn2.to_q.weight',320,320),
       (D+'input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight',320,ctx),
       (D+'input_blocks.1.1.transformer_blocks.0.attn2.to_v.weight',320,ctx),
       (D+'input_blocks.1.1.transformer_blocks.0.ff.net.0.proj.weight',2560,320),
       (D+'input_blocks.3.0.op.weight',320,320,3,3),
       (D+'input_blocks.4.0.skip_connection.weight',640,320,1,1),
       (D+'input_blocks.7.1.transformer_blocks.0.attn2.to_k.weight',1280,ctx),
       (D+'middle_block.0.in_layers.2.weight',1280,1280,3,3),
       (D+'middle_block.1.transformer_blocks.0.attn2.to_k.weight',1280,ctx),
       (D+'middle_block.2.out_layers.3.weight',1280,1280,3,3),
       (D+'output_blocks.2.1.conv.weight',1280,1280,3,3),
       (D+'output_blocks.11.1.transformer_blocks.0.attn2.to_k.weight',320,ctx),
       (D+'out.0.weight',320),(D+'out.2.weight',4,320,3,3),(D+'out.2.bias',4)]
    return r
w('sd2', ['v2-1_768-ema-pruned.safetensors layout (stabilityai/stable-diffusion-2-1, LDM single file, -m):',
          'UNet as SD1 but linear proj_in/proj_out and a 1024 context (OpenCLIP ViT-H/14 text,',
          'cond_stage_model.model.*, 24 layers, 1024 wide); sd.cpp unet.hpp / clip.hpp OPEN_CLIP_VIT_H_14'],
  sd_unet(1024, linear_proj=True)+openclip_text('cond_stage_model.model.',1024,24,4096)+sd_vae())
w('sd2_inpaint', ['stabilityai/stable-diffusion-2-inpainting (512-inpainting-ema.safetensors) layout:',
          'the sd2 list with 9 UNet input channels (latent 4 + mask 1 + masked image 4)'],
  sd_unet(1024, in_ch=9, linear_proj=True)+openclip_text('cond_stage_model.model.',1024,24,4096)+sd_vae())
w('sd1_inpaint', ['sd-v1-5-inpainting.ckpt layout (runwayml): the SD1.5 UNet (context 768, conv proj_in)',
          'with 9 input channels; CLIP ViT-L/14 at cond_stage_model.transformer.*'],
  sd_unet(768, in_ch=9)+clip_l('cond_stage_model.transformer.')+sd_vae())

# ---------------- SDXL ----------------
def sdxl_unet(mc=320, adm=2816, in_ch=4, ctx=2048, refiner=False):
    c1,c2,c3 = (mc, 2*mc, 4*mc)
    r=[(D+'time_embed.0.weight',4*mc,mc),(D+'time_embed.2.weight',4*mc,4*mc),
       (D+'label_emb.0.0.weight',4*mc,adm),(D+'label_emb.0.0.bias',4*mc),(D+'label_emb.0.2.weight',4*mc,4*mc),
       (D+'input_blocks.0.0.weight',mc,in_ch,3,3),(D+'input_blocks.0.0.bias',mc),
       (D+'input_blocks.1.0.in_layers.2.weight',mc,mc,3,3),
       (D+'input_blocks.3.0.op.weight',mc,mc,3,3),
       (D+'input_blocks.4.0.skip_connection.weight',c2,c1,1,1),
       (D+'input_blocks.4.1.proj_in.weight',c2,c2),
       (D+'input_blocks.4.1.transformer_blocks.0.attn1.to_q.weight',c2,c2),
       (D+'input_blocks.4.1.transformer_blocks.0.attn2.to_k.weight',c2,ctx),
       (D+'input_blocks.4.1.transformer_blocks.1.attn2.to_v.weight',c2,ctx),
       (D+'input_blocks.7.1.transformer_blocks.0.attn2.to_k.weight',c3,ctx),
       (D+'input_blocks.7.1.transformer_blocks.%d.ff.net.2.weight'%(3 if refiner else 9),c3,4*c3),
       (D+'middle_block.1.transformer_blocks.0.attn2.to_k.weight',c3,ctx),
       (D+'middle_block.2.in_layers.2.weight',c3,c3,3,3),
       (D+'output_blocks.0.0.skip_connection.weight',c3,2*c3,1,1),
       # skips: base 3 levels (output_blocks.6.0: 640 + 320 in), refiner 4 levels (6.0: 1536 + 768, 9.0: 768 + 384)
       ] + ([(D+'output_blocks.6.0.skip_connection.weight',c2,c3+c2,1,1),
             (D+'output_blocks.9.0.skip_connection.weight',c1,c2+c1,1,1)] if refiner else
            [(D+'output_blocks.6.0.skip_connection.weight',c1,c2+c1,1,1)]) + [
       (D+'out.0.weight',mc),(D+'out.2.weight',4,mc,3,3)]
    return r
XL_SRC='sd_xl_base_1.0.safetensors layout (stabilityai/stable-diffusion-xl-base-1.0 single file, -m): UNet 320 channels, adm 2816, context 2048; CLIP-L at conditioner.embedders.0.transformer.*, OpenCLIP bigG at conditioner.embedders.1.model.*'
sdxl_te=clip_l('conditioner.embedders.0.transformer.')+openclip_text('conditioner.embedders.1.model.',1280,32,5120)
w('sdxl', [XL_SRC, 'sd.cpp model_loader.cpp (conditioner.embedders.1 = second encoder) and unet.hpp'], sdxl_unet()+sdxl_te+sd_vae())
w('sdxl_inpaint', ['diffusers/stable-diffusion-xl-1.0-inpainting-0.1 converted to the single-file layout:',
   'the sdxl list with 9 UNet input channels'], sdxl_unet(in_ch=9)+sdxl_te+sd_vae())
w('sdxl_refiner', ['sd_xl_refiner_1.0.safetensors layout: UNet 384 channels, adm 2560, context 1280;',
   'only OpenCLIP bigG, at conditioner.embedders.0.model.*'],
  sdxl_unet(mc=384, adm=2560, ctx=1280, refiner=True)+openclip_text('conditioner.embedders.0.model.',1280,32,5120)+sd_vae())

# ---------------- SVD ----------------
svd=[(D+'time_embed.0.weight',1280,320),(D+'label_emb.0.0.weight',1280,768),
     (D+'input_blocks.0.0.weight',320,8,3,3),
     (D+'input_blocks.1.0.in_layers.2.weight',320,320,3,3),
     (D+'input_blocks.1.0.time_stack.in_layers.2.weight',320,320,3,1,1),
     (D+'input_blocks.1.0.time_mixer.mix_factor',1),
     (D+'input_blocks.1.1.proj_in.weight',320,320),
     (D+'input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight',320,1024),
     (D+'input_blocks.1.1.time_stack.0.attn2.to_k.weight',320,1024),
     (D+'input_blocks.1.1.time_pos_embed.0.weight',1280,320),
     (D+'input_blocks.1.1.time_mixer.mix_factor',1),
     (D+'input_blocks.8.0.time_mixer.mix_factor',1),
     (D+'middle_block.1.time_stack.0.attn1.to_q.weight',1280,1280),
     (D+'out.2.weight',4,320,3,3),
     ('conditioner.embedders.0.open_clip.model.visual.conv1.weight',1280,3,14,14),
     ('conditioner.embedders.0.open_clip.model.visual.proj',1280,1024),
     ('conditioner.embedders.0.open_clip.model.visual.transformer.resblocks.0.attn.in_proj_weight',3840,1280),
     ('conditioner.embedders.3.encoder.encoder.conv_in.weight',128,3,3,3),
     (VAE+'decoder.conv_in.weight',512,4,3,3),
     (VAE+'decoder.time_mixer.mix_factor',1),
     (VAE+'decoder.up.0.block.0.time_stack.in_layers.2.weight',128,128,3,1,1),
     (VAE+'decoder.time_conv_out.weight',3,3,3,1,1)]
w('svd', ['svd_xt.safetensors layout (stabilityai/stable-video-diffusion-img2vid-xt, generative-models names, -m):',
          'video UNet with time_stack/time_mixer, OpenCLIP ViT-H image encoder, temporal VAE decoder'], svd)

# ---------------- SD3.5 ----------------
h=2432
sd3=[(D+'x_embedder.proj.weight',h,16,2,2),(D+'x_embedder.proj.bias',h),(D+'pos_embed',1,36864,h),
     (D+'context_embedder.weight',h,4096),(D+'t_embedder.mlp.0.weight',h,256),(D+'t_embedder.mlp.2.weight',h,h),
     (D+'y_embedder.mlp.0.weight',h,2048),(D+'y_embedder.mlp.2.weight',h,h),
     (D+'joint_blocks.0.x_block.adaLN_modulation.1.weight',6*h,h),
     (D+'joint_blocks.0.x_block.attn.qkv.weight',3*h,h),(D+'joint_blocks.0.x_block.attn.ln_q.weight',64),
     (D+'joint_blocks.0.x_block.attn.proj.weight',h,h),(D+'joint_blocks.0.x_block.mlp.fc1.weight',4*h,h),
     (D+'joint_blocks.0.x_block.mlp.fc2.weight',h,4*h),(D+'joint_blocks.0.context_block.attn.qkv.weight',3*h,h),
     (D+'joint_blocks.0.context_block.adaLN_modulation.1.weight',6*h,h),
     (D+'joint_blocks.37.context_block.adaLN_modulation.1.weight',2*h,h),
     (D+'joint_blocks.37.x_block.attn.qkv.weight',3*h,h),
     (D+'final_layer.adaLN_modulation.1.weight',2*h,h),(D+'final_layer.linear.weight',64,h)]
sd3+=sd_vae(z=16)+clip_l('text_encoders.clip_l.transformer.')+[('text_encoders.clip_l.transformer.text_projection.weight',768,768)]
sd3+=clip_g('text_encoders.clip_g.transformer.')+t5xxl()
w('sd3', ['sd3.5_large.safetensors layout (stabilityai/stable-diffusion-3.5-large, -m: MMDiT + VAE; 38 joint',
          'blocks, 2432 wide, pos_embed 192x192) with clip_l/clip_g/t5xxl under sd.cpp\'s internal prefixes',
          '(conditioner.hpp SD3CLIPEmbedder, name_conversion.cpp)'], sd3)

# ---------------- Flux.1 ----------------
def flux_dit(hid=3072, img_in=64, txt=4096, nd=19, ns=38, guidance=True, vec=True, mod=True, chroma=False):
    r=lin(D+'img_in',hid,img_in)+lin(D+'txt_in',hid,txt)
    if not chroma:
        r+=[(D+'time_in.in_layer.weight',hid,256),(D+'time_in.out_layer.weight',hid,hid)]
        if vec: r+=[(D+'vector_in.in_layer.weight',hid,768),(D+'vector_in.out_layer.weight',hid,hid)]
        if guidance: r+=[(D+'guidance_in.in_layer.weight',hid,256),(D+'guidance_in.out_layer.weight',hid,hid)]
    else:
        r+=[(D+'distilled_guidance_layer.in_proj.weight',5120,64),
            (D+'distilled_guidance_layer.layers.0.in_layer.weight',5120,5120),
            (D+'distilled_guidance_layer.layers.4.out_layer.weight',5120,5120),
            (D+'distilled_guidance_layer.norms.0.scale',5120),
            (D+'distilled_guidance_layer.out_proj.weight',hid,5120)]
    for b in (0,nd-1):
        p=D+'double_blocks.%d.'%b
        if mod: r+=[(p+'img_mod.lin.weight',6*hid,hid),(p+'txt_mod.lin.weight',6*hid,hid)]
        r+=[(p+'img_attn.qkv.weight',3*hid,hid),(p+'img_attn.norm.query_norm.scale',128),
            (p+'img_attn.norm.key_norm.scale',128),(p+'img_attn.proj.weight',hid,hid),
            (p+'img_mlp.0.weight',4*hid,hid),(p+'img_mlp.2.weight',hid,4*hid),
            (p+'txt_attn.qkv.weight',3*hid,hid),(p+'txt_mlp.0.weight',4*hid,hid)]
    for b in (0,ns-1):
        p=D+'single_blocks.%d.'%b
        r+=[(p+'linear1.weight',3*hid+4*hid,hid),(p+'linear2.weight',hid,hid+4*hid),
            (p+'norm.key_norm.scale',128)]
        if mod: r+=[(p+'modulation.lin.weight',3*hid,hid)]
    r+=[(D+'final_layer.linear.weight',64,hid)]
    if mod: r+=[(D+'final_layer.adaLN_modulation.1.weight',2*hid,hid)]
    return r
flux_te=clip_l('text_encoders.clip_l.transformer.')+t5xxl()
FLUX_SRC='flux1-dev.safetensors layout (black-forest-labs/FLUX.1-dev, BFL names) as --diffusion-model loads it'
w('flux', [FLUX_SRC+'; 19 double / 38 single blocks, 3072 wide;',
           'clip_l/t5xxl as --clip_l/--t5xxl become them in sd.cpp, ae as first_stage_model.; sd.cpp flux.hpp'],
  flux_dit()+flux_te+sd_vae(z=16))
w('flux_fill', ['flux1-fill-dev.safetensors layout (black-forest-labs/FLUX.1-Fill-dev): flux1-dev with img_in 384',
                '(sd.cpp model_loader.cpp VERSION_FLUX_FILL)'], flux_dit(img_in=384)+flux_te+sd_vae(z=16))
w('flux_controls', ['flux1-canny-dev.safetensors / flux1-depth-dev layout: flux1-dev with img_in 128',
                    '(sd.cpp VERSION_FLUX_CONTROLS)'], flux_dit(img_in=128)+flux_te+sd_vae(z=16))
w('flex2', ['Flex.2-preview (ostris) layout: Flux layout, 8 double blocks, img_in 196 (sd.cpp VERSION_FLEX_2)'],
  flux_dit(img_in=196, nd=8)+flux_te)
w('chroma', ['chroma-unlocked-v50.safetensors layout (lodestones/Chroma): Flux blocks without per-block',
             'modulation, no time_in/vector_in/guidance_in, a distilled_guidance_layer (in 64, 5120 wide, 5 layers);',
             'sd.cpp flux.hpp ChromaApproximator, stable-diffusion.cpp is_chroma'],
  flux_dit(chroma=True, mod=False)+t5xxl()+sd_vae(z=16))
rad=[r for r in flux_dit(chroma=True, mod=False) if 'img_in' not in r[0] and 'final_layer' not in r[0]]
rad+=[(D+'img_in_patch.weight',3072,3,16,16),(D+'img_in_patch.bias',3072),
      (D+'nerf_image_embedder.embedder.0.weight',64,67),
      (D+'nerf_blocks.0.norm.scale',64),
      (D+'nerf_final_layer_conv.norm.scale',64),
      (D+'nerf_final_layer_conv.conv.weight',3,64,3,3),(D+'nerf_final_layer_conv.conv.bias',3)]
w('chroma_radiance', ['Chroma1-Radiance layout (lodestones/Chroma1-Radiance): Chroma blocks, a 16x16 pixel patch',
   'embedding and a NeRF head (sd.cpp flux.hpp: img_in_patch, nerf_image_embedder, nerf_blocks,',
   'nerf_final_layer_conv; nerf hidden 64, 3 + 8x8 frequency inputs); no VAE'], rad+t5xxl())
ovis=[r for r in flux_dit(nd=6, ns=27, guidance=False, vec=False, txt=2048) if 'img_mlp' not in r[0] and 'txt_mlp' not in r[0]]
for b in (0,5):
    p=D+'double_blocks.%d.'%b
    ovis+=[(p+'img_mlp.gate_proj.weight',12288,3072),(p+'img_mlp.up_proj.weight',12288,3072),
           (p+'img_mlp.down_proj.weight',3072,12288),(p+'txt_mlp.gate_proj.weight',12288,3072)]
ovis+=[(D+'txt_norm.scale',2048)]
w('ovis_image', ['Ovis-Image-7B layout (AIDC-AI/Ovis-Image, Comfy-Org split file): Flux layout with YakMLP',
   '(gate/up/down) MLPs, a txt_norm, no vector_in (sd.cpp flux.hpp VERSION_OVIS_IMAGE); the Ovis 2.5 LLM',
   '(Qwen3 2B widths) as --llm; block counts illustrative'],
  ovis+qwen_llm(LLM,2048,28,6144,151936,16,8,qknorm=True)+sd_vae(z=16))
w('longcat', ['LongCat-Image layout (meituan-longcat/LongCat-Image, sd.cpp VERSION_LONGCAT): Flux layout with',
   'txt_in from Qwen2.5-VL 7B hidden states (3584), no vector_in/guidance_in; block counts illustrative'],
  flux_dit(txt=3584, nd=10, ns=20, guidance=False, vec=False)+qwen_llm(LLM,3584,28,18944,152064,28,4,qkbias=True)+sd_vae(z=16))

def flux_diffusers():
    h=3072
    r=lin(D+'x_embedder',h,64)+lin(D+'context_embedder',h,4096)
    r+=[(D+'time_text_embed.timestep_embedder.linear_1.weight',h,256),
        (D+'time_text_embed.guidance_embedder.linear_1.weight',h,256),
        (D+'time_text_embed.text_embedder.linear_1.weight',h,768)]
    for b in (0,18):
        p=D+'transformer_blocks.%d.'%b
        r+=[(p+'norm1.linear.weight',6*h,h),(p+'norm1_context.linear.weight',6*h,h),
            (p+'attn.to_q.weight',h,h),(p+'attn.norm_q.weight',128),(p+'attn.add_q_proj.weight',h,h),
            (p+'attn.norm_added_q.weight',128),(p+'attn.to_out.0.weight',h,h),(p+'attn.to_add_out.weight',h,h),
            (p+'ff.net.0.proj.weight',4*h,h),(p+'ff.net.2.weight',h,4*h),(p+'ff_context.net.2.weight',h,4*h)]
    for b in (0,37):
        p=D+'single_transformer_blocks.%d.'%b
        r+=[(p+'norm.linear.weight',3*h,h),(p+'attn.to_q.weight',h,h),(p+'attn.norm_k.weight',128),
            (p+'proj_mlp.weight',4*h,h),(p+'proj_out.weight',h,5*h)]
    r+=[(D+'norm_out.linear.weight',2*h,h),(D+'proj_out.weight',64,h)]
    return r
w('flux_diffusers', ['FLUX.1-dev transformer/diffusion_pytorch_model*.safetensors layout (diffusers',
   'FluxTransformer2DModel names) as --diffusion-model loads it; sd.cpp model_loader.cpp takes',
   'single_transformer_blocks as Flux'], flux_diffusers(), family='flux')
w('flux_fill_diffusers', ['FLUX.1-Fill-dev transformer layout (diffusers names): the flux_diffusers list with x_embedder 384'],
  [(D+'x_embedder.weight',3072,384) if r[0]==D+'x_embedder.weight' else r for r in flux_diffusers()], family='flux_fill')

# ---------------- Flux.2 ----------------
def flux2_dit(hid, nd, ns, txt, guidance):
    r=[(D+'img_in.weight',hid,128),(D+'txt_in.weight',hid,txt),
       (D+'time_in.in_layer.weight',hid,256),(D+'time_in.out_layer.weight',hid,hid),
       (D+'double_stream_modulation_img.lin.weight',6*hid,hid),
       (D+'double_stream_modulation_txt.lin.weight',6*hid,hid),
       (D+'single_stream_modulation.lin.weight',3*hid,hid)]
    if guidance: r+=[(D+'guidance_in.in_layer.weight',hid,256),(D+'guidance_in.out_layer.weight',hid,hid)]
    for b in (0,nd-1):
        p=D+'double_blocks.%d.'%b
        r+=[(p+'img_attn.qkv.weight',3*hid,hid),(p+'img_attn.norm.query_norm.scale',128),
            (p+'img_attn.proj.weight',hid,hid),(p+'img_mlp.0.weight',6*hid,hid),(p+'img_mlp.2.weight',hid,3*hid),
            (p+'txt_attn.qkv.weight',3*hid,hid),(p+'txt_mlp.0.weight',6*hid,hid)]
    for b in (0,ns-1):
        p=D+'single_blocks.%d.'%b
        r+=[(p+'linear1.weight',3*hid+6*hid,hid),(p+'linear2.weight',hid,hid+3*hid),(p+'norm.key_norm.scale',128)]
    r+=[(D+'final_layer.adaLN_modulation.1.weight',2*hid,hid),(D+'final_layer.linear.weight',128,hid)]
    return r
f2vae=[(VAE+'encoder.conv_in.weight',128,3,3,3),(VAE+'encoder.conv_out.weight',64,512,3,3),
       (VAE+'decoder.conv_in.weight',512,32,3,3),(VAE+'bn.running_mean',128),(VAE+'bn.running_var',128)]
w('flux2', ['flux2-dev.safetensors layout (black-forest-labs/FLUX.2-dev, BFL names) as --diffusion-model loads it:',
   '8 double / 48 single blocks, 6144 wide, shared modulations, no biases, mlp ratio 3 (SiLU-gated);',
   'Mistral Small 3.2 24B as --llm; Flux.2 VAE (32 channels, 2x2-patch batch norm); sd.cpp flux.hpp'],
  flux2_dit(6144,8,48,15360,True)+qwen_llm(LLM,5120,40,32768,131072,32,8)+f2vae)
w('flux2_klein', ['FLUX.2-klein-4B layout (black-forest-labs/FLUX.2-klein-4B): 5 double / 20 single blocks, 3072 wide,',
   'txt_in from 3 Qwen3-4B layers (7680), no guidance_in; Qwen3 4B as --llm; sd.cpp VERSION_FLUX2_KLEIN'],
  flux2_dit(3072,5,20,7680,False)+qwen_llm(LLM,2560,36,9728,151936,32,8,qknorm=True)+f2vae)

# ---------------- Wan ----------------
def wan_dit(dim, ffn, heads, layers, in_dim, img_emb=False):
    r=[(D+'patch_embedding.weight',dim,in_dim,1,2,2),(D+'patch_embedding.bias',dim),
       (D+'text_embedding.0.weight',dim,4096),(D+'text_embedding.2.weight',dim,dim),
       (D+'time_embedding.0.weight',dim,256),(D+'time_projection.1.weight',6*dim,dim),
       (D+'blocks.0.modulation',1,6,dim),
       (D+'blocks.0.self_attn.q.weight',dim,dim),(D+'blocks.0.self_attn.norm_q.weight',dim),
       (D+'blocks.0.cross_attn.k.weight',dim,dim),(D+'blocks.0.cross_attn.norm_k.weight',dim),
       (D+'blocks.0.ffn.0.weight',ffn,dim),(D+'blocks.0.ffn.2.weight',dim,ffn),
       (D+'blocks.%d.norm3.weight'%(layers-1),dim),
       (D+'head.head.weight',(64 if in_dim!=48 else 192),dim),(D+'head.modulation',1,2,dim)]
    if img_emb:
        r+=[(D+'img_emb.proj.0.weight',1280),(D+'img_emb.proj.1.weight',1280,1280),(D+'img_emb.proj.3.weight',dim,1280),
            (D+'blocks.0.cross_attn.k_img.weight',dim,dim),(D+'blocks.0.cross_attn.norm_k_img.weight',dim)]
    return r
WAN='Wan-AI Wan2.x original names (Comfy-Org repackaged split files) as --diffusion-model loads them; umT5-XXL as --t5xxl; sd.cpp wan.hpp, model_loader.cpp (patch_embedding ne[3] = in_dim*dim)'
w('wan', ['wan2.1_t2v_14B layout: dim 5120, ffn 13824, 40 heads, 40 blocks, 16 input channels; '+WAN],
  wan_dit(5120,13824,40,40,16)+umt5()+wan_vae())
w('wan2_1_i2v', ['wan2.1_i2v_480p_14B layout: 36 input channels and a CLIP image embedding (img_emb.*, k_img); '+WAN,
   'clip_vision (OpenCLIP ViT-H) as --clip_vision'],
  wan_dit(5120,13824,40,40,36,img_emb=True)+umt5()+wan_vae()+
  [('cond_stage_model.transformer.vision_model.embeddings.patch_embedding.weight',1280,3,14,14)])
w('wan2_2_i2v', ['wan2.2_i2v_low_noise_14B layout: 36 input channels, no img_emb; '+WAN],
  wan_dit(5120,13824,40,40,36)+umt5()+wan_vae())
w('wan2_2_ti2v', ['wan2.2_ti2v_5B layout: dim 3072, ffn 14336, 24 heads, 30 blocks, 48 input channels; '+WAN,
   'Wan2.2 VAE (48 latent channels, dim 160)'],
  wan_dit(3072,14336,24,30,48)+umt5()+wan_vae(z=48,dim=160))

# ---------------- Z-Image ----------------
zi=[(D+'x_embedder.weight',3840,64),(D+'x_embedder.bias',3840),
    (D+'t_embedder.mlp.0.weight',1024,256),(D+'t_embedder.mlp.2.weight',256,1024),
    (D+'cap_embedder.0.weight',2560),(D+'cap_embedder.1.weight',3840,2560),
    (D+'x_pad_token',1,3840),(D+'cap_pad_token',1,3840)]
for p in ('layers.0.','layers.29.','noise_refiner.0.','context_refiner.1.'):
    zi+=[(D+p+'attention.qkv.weight',11520,3840),(D+p+'attention.out.weight',3840,3840),
         (D+p+'attention.q_norm.weight',128),(D+p+'feed_forward.w1.weight',10240,3840),
         (D+p+'feed_forward.w2.weight',3840,10240)]
    if 'context' not in p: zi+=[(D+p+'adaLN_modulation.0.weight',15360,256)]
zi+=[(D+'final_layer.linear.weight',64,3840),(D+'final_layer.adaLN_modulation.1.weight',3840,256)]
w('z_image', ['z_image_turbo_bf16.safetensors layout (Tongyi-MAI/Z-Image-Turbo, Comfy-Org names): 30 layers, 2 noise',
   'and 2 context refiners, 3840 wide, 30 heads x 128; Qwen3 4B as --llm (2560 wide); sd.cpp z_image.hpp'],
  zi+qwen_llm(LLM,2560,36,9728,151936,32,8,qknorm=True)+sd_vae(z=16))

# ---------------- obscure families: sd.cpp block names, shapes from its default configs ----------------
OB=lambda f,extra: ['names from sd.cpp %s block definitions (%s), shapes from its default config;'%(f,SDCPP), extra,
                    'not checked against a real checkpoint header']
pid=[(D+'net.x_embedder.proj.weight',1536,768),(D+'net.t_embedder.mlp.0.weight',1536,256),
     (D+'net.t_embedder.mlp.2.weight',1536,1536),(D+'net.y_embedder.proj.weight',1536,2304),
     (D+'net.blocks.0.attn.qkv.weight',4608,1536),(D+'net.blocks.0.attn.q_norm.weight',64),
     (D+'net.blocks.0.mlp.w1.weight',4096,1536),(D+'net.blocks.0.mlp.w2.weight',1536,4096),
     (D+'net.lq_proj.latent_proj.0.weight',512,16,3,3),(D+'net.lq_proj.latent_proj.0.bias',512),
     (D+'net.final_layer.linear.weight',768,1536)]
w('pid', OB('pid.hpp','PiD (nvidia/PiD): hidden 1536, patch 16, 16-channel source latent projection'),
  pid+[(LLM+'model.embed_tokens.weight',256000,2304),(LLM+'model.layers.0.self_attn.q_proj.weight',2048,2304),
       (LLM+'model.norm.weight',2304)])
ide=[(D+'input_proj.weight',4608,128),(D+'llm_cond_norm.weight',53248),(D+'llm_cond_proj.weight',4608,53248),
     (D+'adaln_proj.weight',512,4608),(D+'embed_image_indicator.weight',2,4608),
     (D+'layers.0.attention.qkv.weight',13824,4608),(D+'layers.0.attention.norm_q.weight',256),
     (D+'layers.0.attention.o.weight',4608,4608),(D+'layers.0.feed_forward.w1.weight',12288,4608),
     (D+'layers.0.attention_norm1.weight',4608),(D+'layers.0.adaln_modulation.weight',18432,512),
     (D+'layers.33.ffn_norm2.weight',4608),(D+'final_layer.linear.weight',128,4608),
     (D+'uncond.input_proj.weight',4608,128),(D+'uncond.embed_image_indicator.weight',2,4608)]
w('ideogram4', OB('ideogram4.hpp','Ideogram4 (ideogram-ai/ideogram-4): 4608 wide, 34 layers, 18 heads; uncond model under model.diffusion_model.uncond.'),
  ide+qwen_llm(LLM,4096,36,12288,151936,32,8,qknorm=True)+f2vae)
kr=[(D+'txtfusion.projector.weight',1,12),(D+'txtfusion.layerwise_blocks.0.attn.wq.weight',2560,2560),
    (D+'txtfusion.refiner_blocks.1.mlp.gate.weight',10240,2560),
    (D+'blocks.0.attn.wq.weight',6144,6144),(D+'blocks.0.attn.wk.weight',1536,6144),
    (D+'blocks.0.attn.qknorm.qnorm.weight',128),(D+'blocks.0.mlp.gate.weight',24576,6144),
    (D+'blocks.0.prenorm.weight',6144),(D+'blocks.27.postnorm.weight',6144),(D+'mod.linear.weight',36864,6144)]
w('krea2', OB('krea2.hpp','Krea2 (krea/Krea-2-Raw): 6144 wide, 28 layers, 48 heads / 12 kv heads, 12-layer text fusion'),
  kr+qwen_llm(LLM,2560,36,9728,151936,32,8,qknorm=True)+wan_vae())
hd=[('model.x_embedder.proj1.weight',128,3072),('model.x_embedder.proj2.weight',4096,128),
    ('model.t_embedder1.mlp.0.weight',4096,256),('model.final_layer2.linear.weight',3072,4096),
    ('model.language_model.embed_tokens.weight',151936,4096),
    ('model.language_model.layers.0.self_attn.q_proj.weight',4096,4096),
    ('model.language_model.layers.0.self_attn.k_proj.weight',1024,4096),
    ('model.language_model.layers.0.mlp.gate_proj.weight',12288,4096),
    ('model.language_model.norm.weight',4096)]
w('hidream_o1', OB('hidream_o1.hpp','HiDream-O1-Image (Comfy-Org checkpoint, -m): pixel patches 32x32x3 through a bottleneck, the language model inside model.language_model.*'), hd)
lens=[(D+'img_in.weight',1536,128),(D+'txt_in.weight',1536,11520),(D+'txt_norm.0.weight',2880),
      (D+'time_text_embed.timestep_embedder.linear_1.weight',1536,256),
      (D+'transformer_blocks.0.attn.img_qkv.weight',4608,1536),(D+'transformer_blocks.0.attn.txt_qkv.weight',4608,1536),
      (D+'transformer_blocks.0.attn.norm_q.weight',64),(D+'transformer_blocks.0.attn.norm_added_q.weight',64),
      (D+'transformer_blocks.0.attn.to_add_out.weight',1536,1536),
      (D+'transformer_blocks.0.img_mlp.w1.weight',6144,1536),(D+'transformer_blocks.0.txt_mlp.w1.weight',6144,1536),
      (D+'transformer_blocks.47.img_mlp.w2.weight',1536,6144),
      (D+'norm_out.linear.weight',3072,1536),(D+'proj_out.weight',128,1536)]
w('lens', OB('lens.hpp','Lens (Comfy-Org/Lens): 48 blocks, 24 heads x 64, text from 4 GPT-OSS-20B layers (2880 each)'), lens+f2vae)
mage=[r for r in open(OUT+'qwen_image.txt').read().split('\n') if r.startswith(D)]
mage=[tuple([r.split()[0]]+[int(x) for x in r.split()[1:]]) for r in mage]
mage=[(D+'img_in.weight',3072,128) if r[0]==D+'img_in.weight' else r for r in mage]
mage=[(D+'proj_out.weight',128,3072) if r[0]==D+'proj_out.weight' else r for r in mage]
w('mage_flow', ['the qwen_image list (golden make_qwen_image_random.py) with a 128-wide img_in / proj_out, which is how',
   'sd.cpp model_loader.cpp tells Mage-Flow from Qwen-Image (VERSION_MAGE_FLOW); not a real checkpoint header'],
  [m for m in mage if 'proj_out.bias' not in m[0]]+[(D+'proj_out.bias',128)])
hy=[(D+'img_in.proj.weight',2048,65,1,1,1),(D+'txt_in.input_embedder.weight',2048,3584),
    (D+'txt_in.t_embedder.in_layer.weight',2048,256),(D+'txt_in.c_embedder.in_layer.weight',2048,3584),
    (D+'txt_in.individual_token_refiner.blocks.0.self_attn.qkv.weight',6144,2048),
    (D+'txt_in.individual_token_refiner.blocks.0.adaLN_modulation.1.weight',4096,2048),
    (D+'time_in.in_layer.weight',2048,256),(D+'byt5_in.fc3.weight',2048,2048),
    (D+'double_blocks.0.img_attn_qkv.weight',6144,2048),(D+'double_blocks.0.img_mod.linear.weight',12288,2048),
    (D+'double_blocks.53.txt_mlp.fc2.weight',2048,8192),(D+'final_layer.linear.weight',128,2048)]
w('hunyuan_video', OB('hunyuan.hpp','HunyuanVideo 1.5 720p T2V (Comfy-Org repackaged): 2048 wide, 54 double blocks, 65 input channels'),
  hy+qwen_llm(LLM,3584,28,18944,152064,28,4,qkbias=True)+
  [('text_encoders.t5xxl.transformer.shared.weight',1510,1472),('text_encoders.t5xxl.transformer.encoder.block.0.layer.0.SelfAttention.q.weight',384,1472)])
an=[(D+'x_embedder.proj.1.weight',2048,68),(D+'t_embedder.1.linear_1.weight',2048,2048),
    (D+'blocks.0.self_attn.q_proj.weight',2048,2048),(D+'blocks.0.cross_attn.k_proj.weight',2048,1024),
    (D+'blocks.0.mlp.layer1.weight',8192,2048),(D+'blocks.27.adaln_modulation_self_attn.1.weight',256,2048),
    (D+'llm_adapter.embed.weight',32128,1024),(D+'llm_adapter.blocks.0.cross_attn.q_proj.weight',1024,1024),
    (D+'llm_adapter.blocks.0.self_attn.o_proj.weight',1024,1024),(D+'llm_adapter.out_proj.weight',1024,1024),
    (D+'final_layer.linear.weight',64,2048)]
w('anima', OB('anima.hpp','Anima (circlestone-labs/Anima): Cosmos-style 2048-wide DiT, 28 blocks, an LLM adapter to 1024'),
  an+qwen_llm(LLM,1024,28,3072,151936,16,8,qknorm=True)+wan_vae())
se=[(D+'img_in.weight',3072,144),(D+'txt_in.weight',3072,6144),
    (D+'dual_time_embed.semantic_embedder.linear_1.weight',1536,256),
    (D+'dual_time_embed.texture_embedder.linear_1.weight',1536,256),
    (D+'double_stream_modulation_img.lin.weight',18432,3072),(D+'single_stream_modulation.lin.weight',9216,3072),
    (D+'double_blocks.0.img_attn.qkv.weight',9216,3072),(D+'single_blocks.0.linear1.weight',27648,3072),
    (D+'final_layer.linear.weight',144,3072)]
w('sefi_image', OB('flux.hpp / sefi_image.hpp','SeFi-Image (Flux.2-style, 128 + 16 semantic channels, dual time embedding); the dual time embedding is checked before Flux.2'),
  se+qwen_llm(LLM,2048,28,6144,151936,16,8,qknorm=True)+f2vae)
bo=[(D+'x_embedder.weight',3360,64),(D+'time_caption_embed.timestep_embedder.linear_1.weight',1024,256),
    (D+'time_caption_embed.caption_embedder.0.weight',4096),(D+'time_caption_embed.caption_embedder.1.weight',3360,4096),
    (D+'double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight',3360,3360),
    (D+'double_stream_layers.0.img_instruct_attn.processor.img_to_k.weight',840,3360),
    (D+'double_stream_layers.0.img_instruct_attn.processor.instruct_to_q.weight',3360,3360),
    (D+'layers.0.attn.to_out.0.weight',3360,3360),(D+'layers.0.feed_forward.linear_1.weight',8960,3360),
    (D+'layers.31.norm1.linear.weight',13440,1024),(D+'norm_out.linear_1.weight',3360,1024)]
w('boogu_image', OB('boogu.hpp','Boogu Image: Lumina-style, 3360 wide, 28 heads / 7 kv heads x 120, 8 double-stream layers'),
  bo+qwen_llm(LLM,4096,36,12288,151936,32,8,qknorm=True)+sd_vae(z=16))
er=[(D+'x_embedder.proj.weight',4096,128,1,1),(D+'x_embedder.proj.bias',4096),(D+'text_proj.weight',4096,3072),
    (D+'time_embedding.linear_1.weight',4096,4096),(D+'adaLN_modulation.1.weight',24576,4096),
    (D+'layers.0.adaLN_sa_ln.weight',4096),(D+'layers.0.self_attention.to_q.weight',4096,4096),
    (D+'layers.0.self_attention.norm_q.weight',128),(D+'layers.0.mlp.gate_proj.weight',12288,4096),
    (D+'layers.35.mlp.up_proj.weight',12288,4096),(D+'final_norm.linear.weight',8192,4096),
    (D+'final_linear.weight',128,4096)]
w('ernie_image', OB('ernie_image.hpp','ERNIE-Image: 4096 wide, 36 layers, 32 heads, ffn 12288, 128 input channels, Ministral 3 3B text (3072)'),
  er+qwen_llm(LLM,3072,26,9216,131072,32,8)+f2vae)
lt=[(D+'patchify_proj.weight',3840,128),(D+'audio_patchify_proj.weight',2048,128),
    (D+'adaln_single.emb.timestep_embedder.linear_1.weight',3840,256),
    (D+'adaln_single.emb.timestep_embedder.linear_1.bias',3840),(D+'adaln_single.linear.weight',34560,3840),
    (D+'audio_adaln_single.emb.timestep_embedder.linear_1.bias',2048),
    (D+'transformer_blocks.0.attn1.to_q.weight',3840,3840),(D+'transformer_blocks.0.attn2.to_k.weight',3840,4096),
    (D+'transformer_blocks.0.audio_attn1.to_q.weight',2048,2048),
    (D+'transformer_blocks.0.audio_to_video_attn.to_k.weight',2048,2048),
    (D+'transformer_blocks.0.ff.net.0.proj.weight',15360,3840),(D+'transformer_blocks.47.audio_ff.net.2.weight',2048,8192),
    (D+'proj_out.weight',128,3840)]
w('ltx2', OB('ltxv.hpp','LTX-2.3 audio-video transformer: video 3840 wide (30 heads x 128), audio 2048 wide'),
  lt+qwen_llm(LLM,3840,48,15360,262208,16,8,qknorm=True,hd=256)+[(VAE+'decoder.conv_in.conv.weight',1024,128,3,3,3)])
mm=[(D+'video_patch_proj.weight',5376,96),(D+'video_patch_proj.bias',5376),(D+'audio_patch_proj.weight',5376,32),
    (D+'text_refiner.proj_in.weight',5376,5120),(D+'text_refiner.blocks.0.attn.qkv_proj.weight',16128,5376),
    (D+'blocks.0.attn.qkv_proj.weight',16128,5376),(D+'blocks.0.attn.out_proj.weight',5376,5376),
    (D+'blocks.0.norm1.weight',5376),(D+'blocks.49.mlp.proj_out.weight',5376,14336),
    (D+'video_out.weight',96,5376),(D+'audio_out.weight',32,5376)]
w('minimax_h3', OB('minimax_h3.hpp','MiniMax-H3: 5376 wide, 50 layers, 56 heads x 128, 24-channel video latent (2x2 patches), 32-channel audio latent'),
  mm+qwen_llm(LLM,4096,36,12288,151936,32,8,qknorm=True))
lb=[(D+'patch_embedder.weight',2048,64),(D+'patch_embedder.bias',2048),
    (D+'time_embedder.linear_1.weight',2048,256),(D+'time_modulation.1.weight',12288,2048),
    (D+'text_embedder.norm.weight',2560),(D+'blocks.0.attn.to_out.weight',2048,2048),
    (D+'blocks.0.norm1.weight',2048),(D+'blocks.0.ffn.gate_proj.weight',6144,2048),
    (D+'blocks.23.norm_post_ffn.weight',2048),(D+'norm_out_modulation.1.weight',4096,2048),
    (D+'proj_out.weight',64,2048)]
w('lingbot_video', OB('lingbot_video.hpp','LingBot-Video dense: 2048 wide, 24 blocks, 16 heads, ffn 6144, 16 latent channels, 1x2x2 patches'),
  lb+qwen_llm(LLM,2560,36,9728,151936,32,8,qknorm=True)+wan_vae())
