fn main(){println!("ex");}
