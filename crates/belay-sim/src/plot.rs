//! The outage (or restart) as a picture: one SVG, two panels.
//!
//! Top: attempts per second (1 s bins, logarithmic axis; a bin with no
//! attempt is drawn at 1, the bottom of the axis). Bottom: connected clients
//! at the end of each second. One colour per policy, with a legend.

use std::path::Path;

use plotters::prelude::*;

use crate::format_duration;
use crate::scenario::outage::{OutageRun, OutageSpec};

/// Pixel size of the picture.
const SIZE: (u32, u32) = (1400, 1000);

/// Well-separated colours (Tableau 10 and a few more); Belay's default is
/// drawn in black and thicker so it stands out.
const COLORS: [RGBColor; 12] = [
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(31, 119, 180),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
    RGBColor(174, 199, 232),
    RGBColor(255, 187, 120),
];

/// The line style of run `i` named `name`.
fn style(i: usize, name: &str) -> ShapeStyle {
    if name == "belay-default" {
        BLACK.stroke_width(4)
    } else {
        COLORS[i % COLORS.len()].stroke_width(2)
    }
}

fn integer(value: &f64) -> String {
    format!("{value:.0}")
}

/// Write the SVG of `runs` to `path`.
pub fn outage_svg(path: &Path, spec: &OutageSpec, runs: &[OutageRun]) -> Result<(), String> {
    draw(path, spec, runs).map_err(|e| format!("cannot draw {}: {e}", path.display()))
}

fn draw(
    path: &Path,
    spec: &OutageSpec,
    runs: &[OutageRun],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(SIZE.1 / 2);
    let horizon = spec.horizon.as_secs_f64();
    let what = if spec.planned {
        "planned restart"
    } else {
        "outage"
    };
    let title = format!(
        "{what}: {} clients, down {}, then {}/s",
        spec.clients,
        format_duration(spec.down_for),
        spec.server.rate
    );

    let peak = runs
        .iter()
        .flat_map(|r| r.record.attempts_per_bin().iter().copied())
        .max()
        .unwrap_or(1)
        .max(10) as f64;
    let mut attempts = ChartBuilder::on(&top)
        .caption(format!("{title}: attempts per second"), ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..horizon, (1f64..peak * 2.0).log_scale())?;
    attempts
        .configure_mesh()
        .x_desc("seconds since the outage started")
        .y_desc("attempts / s (log)")
        .x_label_formatter(&integer)
        .y_label_formatter(&integer)
        .draw()?;
    for (i, run) in runs.iter().enumerate() {
        let style = style(i, &run.case.name);
        let width = run.record.bin().as_secs_f64();
        let points = run
            .record
            .attempts_per_bin()
            .iter()
            .enumerate()
            .map(|(bin, &n)| (bin as f64 * width, f64::from(n).max(1.0)));
        attempts
            .draw_series(LineSeries::new(points, style))?
            .label(run.case.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
    }
    attempts
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()?;

    let clients = spec.clients as f64;
    let mut connected = ChartBuilder::on(&bottom)
        .caption(format!("{title}: connected clients"), ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..horizon, 0f64..clients * 1.05)?;
    connected
        .configure_mesh()
        .x_desc("seconds since the outage started")
        .y_desc("connected clients")
        .x_label_formatter(&integer)
        .y_label_formatter(&integer)
        .draw()?;
    for (i, run) in runs.iter().enumerate() {
        let style = style(i, &run.case.name);
        let width = run.record.bin().as_secs_f64();
        // The count at the end of bin k, drawn at the bin's end; 0 at t = 0.
        let points = std::iter::once((0.0, 0.0)).chain(
            run.record
                .connected_per_bin()
                .iter()
                .enumerate()
                .map(|(bin, &n)| ((bin + 1) as f64 * width, f64::from(n))),
        );
        connected
            .draw_series(LineSeries::new(points, style))?
            .label(run.case.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
    }
    connected
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()?;
    root.present()?;
    Ok(())
}
