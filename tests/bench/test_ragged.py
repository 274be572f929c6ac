"""`pointabstract bench ragged`: the gap it reports is there without lengths and gone with them."""

from pointabstract.bench.ragged import gap


def test_the_gap_closes_with_lengths():
    assert gap("sequoia_cls") < 1e-6 < 1e-2 < gap("sequoia_cls", lengths=False)
    assert gap("pointnet_ae_demo", pad=7.0) < 1e-6 < 1e-2 < gap("pointnet_ae_demo", pad=7.0, lengths=False)
