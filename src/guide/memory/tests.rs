use super::*;
use crate::guide::precision::Precision;
use crate::guide::quantity::GIB;

fn train(params: u64) -> Workload {
    Workload::plain(params, Mode::Train, Precision::Bf16)
}

fn infer(params: u64) -> Workload {
    Workload {
        mode: Mode::Infer,
        ..train(params)
    }
}

fn item(e: &Estimate, id: &str) -> u64 {
    e.items
        .iter()
        .find(|i| i.id == id)
        .unwrap_or_else(|| panic!("no {id} in {:#?}", e.items))
        .bytes
}

fn ids(e: &Estimate) -> Vec<&str> {
    e.items.iter().map(|i| i.id).collect()
}

const BERT_LARGE: u64 = 340_000_000;

#[test]
fn bert_large_adamw_mixed_precision_is_16_bytes_per_parameter() {
    // BERT-large, 340M parameters, BF16 mixed precision, AdamW, no shape given:
    //   weights        340,000,000 × 2 =   680,000,000
    //   gradients      340,000,000 × 2 =   680,000,000
    //   FP32 master    340,000,000 × 4 = 1,360,000,000
    //   Adam m and v   340,000,000 × 8 = 2,720,000,000
    //   model state                      5,440,000,000  (16 B/param, ZeRO paper §3.1)
    //   CUDA context   512 MiB         =   536,870,912
    //   total                            5,976,870,912  (5.57 GiB)
    let e = estimate(&train(BERT_LARGE)).unwrap();
    assert_eq!(
        ids(&e),
        [
            "weights",
            "gradients",
            "master_weights",
            "optimizer_states",
            "cuda_context"
        ]
    );
    assert_eq!(item(&e, "weights"), 680_000_000);
    assert_eq!(item(&e, "gradients"), 680_000_000);
    assert_eq!(item(&e, "master_weights"), 1_360_000_000);
    assert_eq!(item(&e, "optimizer_states"), 2_720_000_000);
    assert_eq!(e.parts.model_state, 5_440_000_000);
    assert_eq!(e.total_bytes, 5_976_870_912);
    // The simple rule: 340M × 2 + optimizer 2 × (340M × 2) = 680M + 1,360M = 2,040,000,000
    // (6 B/param): it forgets gradients and the master copy, and keeps Adam in 16-bit.
    assert_eq!(e.simple_rule.bytes, 2_040_000_000);
    let why = e.simple_rule.differences.join(" ");
    assert!(
        why.contains("6 bytes per parameter (2.04 GB for 340M"),
        "{why}"
    );
    assert!(why.contains("16 bytes per parameter (5.44 GB)"), "{why}");
    assert!(
        e.not_counted
            .iter()
            .any(|n| n.starts_with("activations: give --layers and --hidden and --seq-len"))
    );
}

#[test]
fn bert_large_activations_follow_korthikanti() {
    // BERT-large shape: L = 24, h = 1024, a = 16; s = 512, b = 8.
    //   34·s·b·h   = 34 × 512 × 8 × 1024      = 142,606,336
    //   5·a·s²·b   = 5 × 16 × 512² × 8        = 167,772,160   (= s·b·h · 5as/h)
    //   per layer  = 310,378,496; × 24 layers = 7,449,083,904  (6.94 GiB)
    // Total: 5,440,000,000 + 7,449,083,904 + 536,870,912 = 13,425,954,816 (12.50 GiB).
    let w = Workload {
        batch: 8,
        seq_len: Some(512),
        shape: Some(Shape {
            layers: 24,
            hidden: 1024,
            heads: Some(16),
            kv_heads: None,
        }),
        ..train(BERT_LARGE)
    };
    let e = estimate(&w).unwrap();
    assert_eq!(item(&e, "activations"), 7_449_083_904);
    assert_eq!(e.total_bytes, 13_425_954_816);
    // The rule counts activations at 4 bytes a value, twice the 16-bit figure:
    // 2,040,000,000 + 2 × 7,449,083,904 = 16,938,167,808.
    assert_eq!(e.simple_rule.bytes, 16_938_167_808);

    // Without --heads the attention scores are not counted (FlashAttention):
    // 24 × 142,606,336 = 3,422,552,064.
    let mut no_heads = w;
    no_heads.shape = Some(Shape {
        heads: None,
        ..w.shape.unwrap()
    });
    assert_eq!(
        item(&estimate(&no_heads).unwrap(), "activations"),
        3_422_552_064
    );

    // Full checkpointing: 24 × 2·s·b·h = 24 × 8,388,608 = 201,326,592, plus one layer
    // rebuilt in its backward pass, 310,378,496: 511,705,088.
    let ckpt = Workload {
        checkpointing: true,
        ..w
    };
    assert_eq!(item(&estimate(&ckpt).unwrap(), "activations"), 511_705_088);

    // FP32 training: 16 B/param state (4 + 4 + 8, no master copy), activations doubled.
    let fp32 = Workload {
        precision: Precision::Fp32,
        ..w
    };
    let e = estimate(&fp32).unwrap();
    assert!(!ids(&e).contains(&"master_weights"));
    assert_eq!(e.parts.model_state, 5_440_000_000);
    assert_eq!(item(&e, "activations"), 14_898_167_808);
}

#[test]
fn zero_stages_reproduce_the_zero_papers_figure_1() {
    // ZeRO paper, Figure 1: 7.5B parameters, 64 GPUs, K = 12 (mixed-precision Adam):
    // baseline (2 + 2 + 12)·Ψ = 120 GB; stage 1: 2Ψ + 2Ψ + 12Ψ/64 = 31.4 GB;
    // stage 2: 2Ψ + 14Ψ/64 = 16.6 GB; stage 3: 16Ψ/64 = 1.9 GB.
    let psi = 7_500_000_000;
    let state = |zero: u8| {
        let w = Workload {
            zero,
            gpus: if zero == 0 { 1 } else { 64 },
            ..train(psi)
        };
        let e = estimate(&w).unwrap();
        e.total_bytes - CONTEXT_BYTES
    };
    assert_eq!(state(0), 120_000_000_000);
    assert_eq!(state(1), 31_406_250_000);
    assert_eq!(state(2), 16_640_625_000);
    assert_eq!(state(3), 1_875_000_000);
}

#[test]
fn seven_billion_on_eight_gpus() {
    // 7B, BF16 AdamW, 8 GPUs: stage 1 = 14 + 14 + 84/8 = 38.5 GB; stage 2 = 14 + 98/8 =
    // 26.25 GB; stage 3 = 112/8 = 14 GB (all before the CUDA context).
    let at = |zero| {
        let e = estimate(&Workload {
            zero,
            gpus: 8,
            ..train(7_000_000_000)
        })
        .unwrap();
        e.total_bytes - CONTEXT_BYTES
    };
    assert_eq!(at(1), 38_500_000_000);
    assert_eq!(at(2), 26_250_000_000);
    assert_eq!(at(3), 14_000_000_000);
}

#[test]
fn llama2_7b_inference_kv_cache() {
    // Llama-2-7B shape (L = 32, h = 4096, 32 heads, no GQA), FP16, 4096 tokens, batch 1:
    //   weights   7,000,000,000 × 2                  = 14,000,000,000
    //   KV cache  2 × 32 × 4096 × 4096 × 1 × 2 bytes = 2,147,483,648 (2 GiB)
    //   context                                       536,870,912
    //   total                                      16,684,354,560 (15.54 GiB)
    let w = Workload {
        precision: Precision::Fp16,
        seq_len: Some(4096),
        shape: Some(Shape {
            layers: 32,
            hidden: 4096,
            heads: Some(32),
            kv_heads: None,
        }),
        ..infer(7_000_000_000)
    };
    let e = estimate(&w).unwrap();
    assert_eq!(ids(&e), ["weights", "kv_cache", "cuda_context"]);
    assert_eq!(item(&e, "kv_cache"), 2 * GIB);
    assert_eq!(e.total_bytes, 16_684_354_560);
    assert_eq!(e.simple_rule.bytes, 14_000_000_000);

    // Grouped-query attention with 8 KV heads of 32 cuts the cache to a quarter: 512 MiB.
    let gqa = Workload {
        shape: Some(Shape {
            kv_heads: Some(8),
            ..w.shape.unwrap()
        }),
        ..w
    };
    assert_eq!(item(&estimate(&gqa).unwrap(), "kv_cache"), 512 * MIB);

    // INT4 weights: 7e9 × 4 / 8 = 3,500,000,000; the KV cache stays 16-bit.
    let int4 = Workload {
        precision: Precision::Int4,
        ..w
    };
    let e = estimate(&int4).unwrap();
    assert_eq!(item(&e, "weights"), 3_500_000_000);
    assert_eq!(item(&e, "kv_cache"), 2 * GIB);
}

#[test]
fn other_optimizers() {
    // 1B, BF16: SGD momentum 2 + 2 + 4 + 4 = 12 B/param; 8-bit Adam 2 + 2 + 4 + 2 = 10;
    // Adafactor 2 + 2 + 4 + 0 = 8 (factored moments not counted, and said so).
    let with = |optimizer| {
        estimate(&Workload {
            optimizer,
            ..train(1_000_000_000)
        })
        .unwrap()
    };
    assert_eq!(with(Optimizer::Sgd).parts.model_state, 12_000_000_000);
    assert_eq!(
        with(Optimizer::EightBitAdam).parts.model_state,
        10_000_000_000
    );
    let ada = with(Optimizer::Adafactor);
    assert_eq!(ada.parts.model_state, 8_000_000_000);
    assert!(ada.not_counted.iter().any(|n| n.contains("Adafactor")));
}

#[test]
fn combinations_the_formulas_do_not_cover_are_refused() {
    for precision in [Precision::Fp8, Precision::Int8, Precision::Int4] {
        let w = Workload {
            precision,
            ..train(BERT_LARGE)
        };
        assert!(estimate(&w).is_err(), "{precision:?}");
    }
    assert!(
        estimate(&Workload {
            zero: 3,
            gpus: 8,
            ..infer(BERT_LARGE)
        })
        .is_err()
    );
    assert!(
        estimate(&Workload {
            zero: 2,
            ..train(BERT_LARGE)
        })
        .is_err(),
        "ZeRO on one GPU"
    );
    assert!(
        estimate(&Workload {
            checkpointing: true,
            ..infer(BERT_LARGE)
        })
        .is_err()
    );
    let gqa = Workload {
        seq_len: Some(8),
        shape: Some(Shape {
            layers: 2,
            hidden: 64,
            heads: Some(4),
            kv_heads: Some(8),
        }),
        ..infer(BERT_LARGE)
    };
    assert!(estimate(&gqa).is_err());
    assert!(
        estimate(&train(u64::MAX / 2)).is_err(),
        "overflow is an error, not a wrap"
    );
}
