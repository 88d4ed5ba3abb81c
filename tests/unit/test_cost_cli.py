"""``twinnet cost``: tables, JSON with units, the sweep plot, the bvn mode, and clean errors."""

import json

import pytest

from emulation.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["cost", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_reproduces_the_binary_4_tree(capsys) -> None:
    code, out, _ = run(capsys, "--nodes", "16", "--radix", "4", "--json")
    assert code == 0
    report = json.loads(out)
    mono = report["comparison"]["monolithic"]
    counts = (mono["levels"], mono["switches"], mono["inter_switch_links"], mono["total_cost"])
    assert counts == (4, 32, 48, 4192)
    assert report["parameters"]["a"] == 10 and report["parameters"]["b"] == 100
    assert report["optimum"]["smoothed"] == pytest.approx(18.42, abs=0.006)
    for field in ("levels", "switches", "chips", "inter_switch_links", "internal_links", "crosspoints",
                  "total_cost"):
        assert field in report["units"]
    assert any("twin" in line for line in report["assumptions"])


def test_twin_comparison_of_seed_000(capsys) -> None:
    code, out, _ = run(capsys, "--nodes", "21952", "--radix", "56", "--internal-links", "8", "--json")
    assert code == 0
    twin = json.loads(out)["comparison"]["twin"]
    assert (twin["levels"], twin["switches"], twin["chips"], twin["chip_radix"]) == (3, 2352, 4704, 36)


def test_text_table_states_its_assumptions(capsys) -> None:
    code, out, _ = run(capsys, "--nodes", "1024", "--radix", "24")
    assert code == 0
    assert "194,888" in out  # C_ss(24, 1024, 10, 100)
    assert "Assumptions:" in out and "internal links" in out
    assert "monolithic" in out and "twin" in out


def test_preset_reproduces_table_i(capsys) -> None:
    code, out, _ = run(capsys, "--nodes", "65536", "--preset", "high-end", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["optimum"]["smoothed"] == pytest.approx(551.9, abs=0.05)


def test_sweep_and_plot(capsys, tmp_path) -> None:
    picture = tmp_path / "cost.png"
    code, out, _ = run(capsys, "--nodes", "256", "--sweep", "4:32:4", "--plot", str(picture), "--json")
    assert code == 0
    report = json.loads(out)
    assert [row["radix"] for row in report["sweep"]] == [4, 8, 12, 16, 20, 24, 28, 32]
    assert report["sweep"][0]["monolithic"]["levels"] == 8  # 2^8 nodes, binary tree
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bvn_mode_link_totals(capsys) -> None:
    code, out, _ = run(capsys, "bvn", "--nodes", "256", "--json")
    assert code == 0
    report = json.loads(out)
    assert (report["total_up_links_nonblocking"], report["total_up_links_lemma1"]) == (2048, 1808)
    family = report["bit_reverse_family"]
    assert family["sums_to_all_ones"] and family["all_have_uniform_mapping_property"]
    assert family["meets_lemma1_bound"]
    code, out, _ = run(capsys, "bvn", "--nodes", "16")
    assert code == 0 and "nonblocking 64, Lemma 1 52" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "1"], "end nodes"),
        (["--nodes", "16", "--radix", "34"], "outside the model's range 4..32"),
        (["--nodes", "16", "--radix", "10", "--internal-links", "5"], "1 <= r < 5"),
        (["--nodes", "16", "-a", "-1"], "cost parameter a"),
        (["--nodes", "16", "-b", "nan"], "cost parameter b"),
        (["--nodes", "16", "--sweep", "4:64"], "beyond"),
        (["--nodes", "16", "--preset", "low-end", "-b", "2"], "--preset"),
        (["--nodes", "16", "--plot", "cost.svg"], "PNG"),
        (["bvn", "--nodes", "12"], "power of two"),
        (["bvn", "--nodes", "16", "--radix", "4"], "fattree mode"),
    ],
)
def test_bad_input_gives_a_message(capsys, argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert out == ""


def test_non_integer_nodes_is_an_argument_error(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["cost", "--nodes", "2.5"])
    assert exit_info.value.code == 2
    assert "invalid int value" in capsys.readouterr().err
