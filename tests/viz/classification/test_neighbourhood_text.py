from pointabstract.viz.classification.neighbourhood_text import agreement_markdown, figure_caption, verdict

GOOD = {"feature": 0.80, "xyz": 0.70, "chance": 0.5, "k": 40, "points": 128}
FLAT = {"feature": 0.705, "xyz": 0.70, "chance": 0.5, "k": 40, "points": 128}


def test_verdict_reads_the_numbers():
    assert verdict(GOOD).startswith("feature-space neighbourhoods follow parts more than 3D balls do (0.80 vs 0.70")
    assert "does NOT group by parts beyond 3D proximity" in verdict(FLAT)  # within the 0.01 margin


def test_caption_and_section_carry_the_numbers():
    agreement = {"block_1": FLAT, "block_3": GOOD, "shapes": 64, "num_points": 1024}
    caption = figure_caption(agreement, 3)
    assert "block 3 (128 points, K = 40, 64 test shapes of 1024 points)" in caption
    assert "feature space 0.800, 3D space 0.700, chance 0.500" in caption
    assert figure_caption(None, 3) == "" and figure_caption(agreement, 2) == ""
    text = agreement_markdown("n.png", {"part_agreement": agreement}, 3, caption)
    assert "](n.png)" in text and "| 1 | 128 | 40 | 0.705 | 0.700 | 0.500 | +0.005 |" in text
    assert text.index("| 1 |") < text.index("| 3 |") and "Block 3 (shown): feature-space" in text
    assert "_no labels_" in agreement_markdown("n.png", {}, 3, "no labels")
